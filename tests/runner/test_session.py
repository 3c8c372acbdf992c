import json
import os
import re
import stat
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.llm.codec import CodecError
from runner.llm.types import Message, Opaque, Text, ToolResult, ToolUse, Usage
from runner.session import (
    CompactionRecord,
    JobMark,
    Session,
    SessionError,
    SessionMeta,
    SessionStore,
    before_job,
    start_job,
    utc_timestamp,
)

MESSAGES = (
    Message("user", (Text("fix the flaky date test ✓"),)),
    Message(
        "assistant",
        (
            Opaque("anthropic", "thinking", {"thinking": "…", "signature": "c2ln"}),
            ToolUse("toolu_1", "bash", {"argv": ["pytest", "-q"]}),
        ),
        usage=Usage(1200, 80, 1000, 0),
    ),
    Message("user", (ToolResult("toolu_1", (Text("1 failed"),), is_error=True),)),
    Message("assistant", (Text("Fixed."),), usage=Usage(1300, 40, 0, 1000)),
)


def make_session(session_id: str = "20261129T232438Z-1a2b3c4d", n: int = 4) -> Session:
    meta = SessionMeta(
        id=session_id,
        provider="anthropic",
        model="claude-sonnet-5-5",
        cwd="/work/repo",
        created_at="2026-11-29T23:24:38Z",
        updated_at="2026-11-29T23:30:00Z",
        usage=Usage(2500, 120, 1000, 1000),
    )
    return Session(meta=meta, messages=MESSAGES[:n])


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = make_session()
    store.save(session)
    assert store.load(session.meta.id) == session


def test_compactions_are_kept_in_the_metadata(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    base = make_session()
    records = (
        CompactionRecord("2026-11-29T23:26:00Z", "cleared", 120_000, 64_000),
        CompactionRecord("2026-11-29T23:29:00Z", "summarised", 158_000, 12_000),
    )
    session = replace(base, meta=replace(base.meta, compactions=records))
    store.save(session)

    assert store.load(session.meta.id) == session
    path = tmp_path / "sessions" / f"{session.meta.id}.jsonl"
    meta = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert meta["compactions"][1] == {
        "at": "2026-11-29T23:29:00Z",
        "stage": "summarised",
        "tokens_before": 158_000,
        "tokens_after": 12_000,
    }


@pytest.mark.parametrize(
    "compactions",
    [{"at": "x"}, [{"at": "x", "stage": "cleared", "tokens_before": "1", "tokens_after": 1}], [3]],
    ids=["not-a-list", "count-as-text", "not-an-object"],
)
def test_a_bad_compaction_record_is_one_line(tmp_path: Path, compactions: object) -> None:
    store = SessionStore(tmp_path)
    session = make_session()
    store.save(session)
    path = tmp_path / "sessions" / f"{session.meta.id}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    meta = json.loads(lines[0])
    meta["compactions"] = compactions
    path.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n", encoding="utf-8")

    with pytest.raises(SessionError, match=r"line 1: .*compaction") as raised:
        store.load(session.meta.id)
    assert "\n" not in str(raised.value)


def test_file_is_jsonl_with_metadata_first(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = make_session()
    store.save(session)
    path = tmp_path / "sessions" / f"{session.meta.id}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(MESSAGES)
    records = [json.loads(line) for line in lines]
    assert records[0] == {
        "type": "session",
        "version": 1,
        "id": session.meta.id,
        "provider": "anthropic",
        "model": "claude-sonnet-5-5",
        "cwd": "/work/repo",
        "created_at": "2026-11-29T23:24:38Z",
        "updated_at": "2026-11-29T23:30:00Z",
        "usage": {
            "input_tokens": 2500,
            "output_tokens": 120,
            "cache_creation_input_tokens": 1000,
            "cache_read_input_tokens": 1000,
        },
    }
    assert [r["type"] for r in records[1:]] == ["message"] * len(MESSAGES)
    assert [r["role"] for r in records[1:]] == ["user", "assistant", "user", "assistant"]
    assert "usage" not in records[1]
    assert records[2]["usage"]["input_tokens"] == 1200
    assert "✓" in lines[1]  # stored as UTF-8, not escaped


def test_file_and_directory_are_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home)
    store.save(make_session())
    path = home / "sessions" / "20261129T232438Z-1a2b3c4d.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "sessions").stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_save_replaces_the_previous_version(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.save(make_session(n=1))
    store.save(make_session(n=3))
    assert len(store.load("20261129T232438Z-1a2b3c4d").messages) == 3
    assert [p.name for p in (tmp_path / "sessions").iterdir()] == [
        "20261129T232438Z-1a2b3c4d.jsonl"
    ]


def test_failing_serialization_midway_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    old = make_session(n=2)
    store.save(old)
    path = tmp_path / "sessions" / f"{old.meta.id}.jsonl"
    before = path.read_bytes()
    # The third message cannot be encoded: two lines are already written by then.
    broken = Message("assistant", (ToolUse("t", "bash", {"argv": {1, 2}}),))  # type: ignore[dict-item]
    new = Session(meta=old.meta, messages=(*MESSAGES[:2], broken, MESSAGES[3]))

    with pytest.raises(CodecError):
        store.save(new)

    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert store.load(old.meta.id) == old


def test_failing_replace_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path)
    old = make_session(n=1)
    store.save(old)
    path = tmp_path / "sessions" / f"{old.meta.id}.jsonl"
    before = path.read_bytes()

    def failing_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(SessionError) as excinfo:
        store.save(make_session(n=4))

    assert str(excinfo.value) == f"cannot save session to {path}: No space left on device"
    # The machine's failure, not the caller's: `neo run` exits 1 for it, not 2.
    assert not isinstance(excinfo.value, ConfigError)
    assert excinfo.value.kind == "session_error"
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_unknown_id_names_the_directory(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with pytest.raises(SessionError) as excinfo:
        store.load("20261129T000000Z-deadbeef")
    assert str(excinfo.value) == (
        f"no session '20261129T000000Z-deadbeef' in {tmp_path / 'sessions'} (check --resume)"
    )
    assert isinstance(excinfo.value, ConfigError)


@pytest.mark.parametrize(
    "bad_id",
    ["../secrets", "..", "a/b", "/etc/passwd", "a\\b", ".hidden", "a..b", "", "x\ny", "a b", "é"],
)
def test_unsafe_ids_are_refused(tmp_path: Path, bad_id: str) -> None:
    store = SessionStore(tmp_path / "home")
    with pytest.raises(SessionError, match=r"^invalid session id ") as excinfo:
        store.load(bad_id)
    assert "\n" not in str(excinfo.value)
    with pytest.raises(SessionError, match=r"^invalid session id "):
        store.save(make_session(session_id=bad_id))
    assert not (tmp_path / "home").exists()
    assert list(tmp_path.iterdir()) == []


def write_session_file(tmp_path: Path, *lines: str | bytes) -> Path:
    store = SessionStore(tmp_path)
    store.save(make_session(n=0))
    path = tmp_path / "sessions" / "20261129T232438Z-1a2b3c4d.jsonl"
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    path.write_bytes(path.read_bytes() + data)
    return path


GOOD_LINE = json.dumps(
    {"type": "message", "role": "user", "content": [{"type": "text", "text": "hi"}]}
)


@pytest.mark.parametrize(
    ("lines", "lineno", "reason"),
    [
        ((GOOD_LINE, "{not json"), 3, "invalid JSON (Expecting property name"),
        ((GOOD_LINE, GOOD_LINE, '{"type": "message", "role": "user"'), 4, "invalid JSON"),
        ((b"\xff\xfe",), 2, "not valid UTF-8"),
        (("[1, 2]",), 2, "expected a JSON object"),
        (('{"type": "session", "version": 1}',), 2, "expected a message, got type 'session'"),
        (
            (GOOD_LINE, '{"type": "message", "role": "user", "content": [{"type": "text"}]}'),
            3,
            "content[0] (text).text must be a string, got null",
        ),
    ],
)
def test_corrupt_lines_name_file_and_line(
    tmp_path: Path, lines: tuple[str | bytes, ...], lineno: int, reason: str
) -> None:
    path = write_session_file(tmp_path, *lines)
    with pytest.raises(SessionError) as excinfo:
        SessionStore(tmp_path).load("20261129T232438Z-1a2b3c4d")
    message = str(excinfo.value)
    assert message.startswith(f"corrupt session file {path} line {lineno}: ")
    assert reason in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("first_line", "reason"),
    [
        ("", "empty file, no session metadata"),
        (GOOD_LINE, "expected session metadata, got type 'message'"),
        ('{"type": "session", "version": 2}', "unsupported session format version 2"),
        (
            '{"type": "session", "version": 1, "id": "other", "provider": "p", "model": "m",'
            ' "cwd": "/", "created_at": "t", "updated_at": "t"}',
            "session id 'other' does not match the file name",
        ),
        ('{"type": "session", "version": 1, "id": 7}', "session id must be a string, got 7"),
    ],
)
def test_corrupt_metadata_is_reported_on_line_one(
    tmp_path: Path, first_line: str, reason: str
) -> None:
    path = tmp_path / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    path.write_text(first_line + "\n" if first_line else "")
    with pytest.raises(SessionError) as excinfo:
        SessionStore(tmp_path).load("s1")
    assert str(excinfo.value) == f"corrupt session file {path} line 1: {reason}"


def test_metadata_without_usage_loads_with_zero_usage(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    meta = {
        "type": "session",
        "version": 1,
        "id": "s1",
        "provider": "openai",
        "model": "m",
        "cwd": "/r",
        "created_at": "a",
        "updated_at": "b",
    }
    path.write_text(json.dumps(meta) + "\n" + GOOD_LINE + "\n")
    session = SessionStore(tmp_path).load("s1")
    assert session.meta == SessionMeta("s1", "openai", "m", "/r", "a", "b", Usage())
    assert session.messages == (Message("user", (Text("hi"),)),)


# --- job marks


def run_job(session: Session, job_id: str, task: str, *turns: Message) -> Session:
    """What runner.job saves while job `job_id` runs: the agent's transcript, marked."""
    marked = start_job(session, job_id)
    messages = list(marked.messages)
    # As the agent loop does: text after a trailing user message joins it.
    if messages and messages[-1].role == "user":
        last = messages.pop()
        messages.append(replace(last, content=(*last.content, Text(task))))
    else:
        messages.append(Message("user", (Text(task),)))
    messages.extend(turns)
    usage = marked.meta.usage + Usage(5000, 300, 0, 0)
    return Session(replace(marked.meta, usage=usage), tuple(messages))


JOB_TURNS = (
    Message("assistant", (ToolUse("toolu_9", "edit_file", {"path": "a.py"}),), Usage(1, 2)),
    Message("user", (ToolResult("toolu_9", (Text("edited"),)),)),
)


@pytest.mark.parametrize("n", [0, 3, 4], ids=["empty", "ends-with-user", "ends-with-assistant"])
def test_before_job_is_the_session_the_job_started_from(tmp_path: Path, n: int) -> None:
    store = SessionStore(tmp_path)
    start = make_session(n=n)
    during = run_job(start, "job-7", "add a test", *JOB_TURNS)
    store.save(during)

    loaded = store.load(start.meta.id)

    assert loaded == during
    assert loaded.meta.job == JobMark(
        "job-7", False, n, len(MESSAGES[n - 1].content) if n else 0, start.meta.usage
    )
    assert before_job(loaded) == start
    # The job's text joined the trailing user message, and is gone again.
    assert "add a test" not in repr(before_job(loaded).messages)


def test_a_marked_session_file_names_its_job_and_an_unmarked_one_has_no_job_key(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path)
    marked = run_job(make_session(n=4), "job-7", "go")
    assert marked.meta.job is not None
    ended = replace(marked.meta.job, finished=True)
    store.save(replace(marked, meta=replace(marked.meta, job=ended)))
    path = store.path(marked.meta.id)
    first = json.loads(path.read_text().splitlines()[0])
    assert first["job"] == {
        "id": "job-7",
        "finished": True,
        "messages": 4,
        "blocks": 1,
        "usage": make_session().meta.usage.as_dict(),
    }
    store.save(before_job(store.load(marked.meta.id)))
    assert "job" not in json.loads(path.read_text().splitlines()[0])
    assert before_job(make_session()) == make_session()


MARKED = {
    "type": "session",
    "version": 1,
    "id": "s1",
    "provider": "p",
    "model": "m",
    "cwd": "/",
    "created_at": "t",
    "updated_at": "t",
}


@pytest.mark.parametrize(
    ("job", "reason"),
    [
        ([], "session job must be an object, got []"),
        ({"id": 7}, "session job id must be a string, got 7"),
        ({"id": "j", "finished": "no"}, "session job finished must be true or false, got 'no'"),
        (
            {"id": "j", "finished": False, "messages": -1, "blocks": 0},
            "session job messages must be a non-negative integer, got -1",
        ),
        (
            {"id": "j", "finished": False, "messages": 0, "blocks": True},
            "session job blocks must be a non-negative integer, got True",
        ),
        (
            {"id": "j", "finished": False, "messages": 2, "blocks": 0},
            "session job starts after message 2, the file has 1",
        ),
        (
            {"id": "j", "finished": False, "messages": 1, "blocks": 2},
            "session job starts after block 2 of a message of 1",
        ),
        (
            {
                "id": "j",
                "finished": False,
                "messages": 0,
                "blocks": 0,
                "usage": {"input_tokens": -1},
            },
            "job.usage.input_tokens must be a non-negative integer, got -1",
        ),
    ],
)
def test_a_corrupt_job_mark_is_reported_on_line_one(
    tmp_path: Path, job: object, reason: str
) -> None:
    path = tmp_path / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({**MARKED, "job": job}) + "\n" + GOOD_LINE + "\n")
    with pytest.raises(SessionError) as excinfo:
        SessionStore(tmp_path).load("s1")
    assert str(excinfo.value) == f"corrupt session file {path} line 1: {reason}"


def test_new_ids_are_unique_safe_and_timestamped(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    before = datetime.now(UTC).replace(microsecond=0)
    ids = {store.new_id() for _ in range(200)}
    after = datetime.now(UTC)
    assert len(ids) == 200
    for session_id in ids:
        assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", session_id)
        stamp = datetime.strptime(session_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        assert before <= stamp <= after
        assert store.path(session_id).parent == tmp_path / "sessions"


def test_ids_sort_by_time() -> None:
    # The id's timestamp is fixed-width, most significant field first.
    early = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ids = [f"{early + timedelta(seconds=s):%Y%m%dT%H%M%SZ}-ffffffff" for s in (0, 9, 60, 86400)]
    assert sorted(ids) == ids
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", SessionStore(Path()).new_id())


def test_latest_is_the_most_recently_saved(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert store.latest() is None
    store.save(make_session("b-older"))
    store.save(make_session("a-newer"))
    os.utime(store.path("b-older"), ns=(1_000_000_000, 1_000_000_000))
    os.utime(store.path("a-newer"), ns=(2_000_000_000, 2_000_000_000))
    (tmp_path / "sessions" / "notes.txt").write_text("ignored")
    assert store.latest() == "a-newer"


def test_utc_timestamp_is_iso_8601_utc() -> None:
    moment = datetime(2026, 11, 29, 23, 24, 38, 999, tzinfo=UTC)
    assert utc_timestamp(moment) == "2026-11-29T23:24:38Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", utc_timestamp())


def test_the_invoked_skills_are_kept_in_the_metadata(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    base = make_session()
    session = replace(base, meta=replace(base.meta, skills=("release-notes", "fix-ci")))
    store.save(session)

    assert store.load(session.meta.id) == session
    path = tmp_path / "sessions" / f"{session.meta.id}.jsonl"
    assert json.loads(path.read_text().splitlines()[0])["skills"] == ["release-notes", "fix-ci"]
    store.save(base)
    assert "skills" not in json.loads(path.read_text().splitlines()[0])
