"""Sessions on disk: one JSONL file per session under `$NEO_HOME/sessions`.

A thread's session carries the mark of the job that last wrote it, so the
turns of a job that never ended can be dropped (`before_job`). The format is
in docs/architecture.md, "Sessions".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TextIO

from runner.durable import fsync_directory
from runner.errors import ConfigError, NeoError
from runner.llm.codec import CodecError, message_from_json, message_to_json, usage_from_json
from runner.llm.types import JSONObject, Message, Usage

FORMAT_VERSION: Final = 1
_SUFFIX: Final = ".jsonl"
# Letters, digits, '.', '_' and '-', starting with a letter or digit: no path
# separators, no hidden files, nothing a shell or a file system reads specially.
_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_META_FIELDS: Final = ("id", "provider", "model", "cwd", "created_at", "updated_at")


class SessionError(NeoError):
    """A session that cannot be saved, found, named or read; the message is one line.

    Saving fails for reasons of the machine (a full disk), which fail the run;
    the others are `SessionConfigError`s.
    """

    kind = "session_error"


class SessionConfigError(SessionError, ConfigError):
    """A session that cannot be found, named or read: the caller's to fix (`--resume`)."""

    kind = "config_error"


@dataclass(frozen=True, slots=True)
class JobMark:
    """The job that last wrote a session, and where the session stood before it."""

    id: str
    finished: bool
    # How many messages preceded the job, and how many blocks the last of them had.
    messages: int
    blocks: int
    usage: Usage = field(default_factory=Usage)  # the session's usage before the job


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction of the session's conversation: when, how, and tokens before and after."""

    at: str  # ISO 8601, UTC
    stage: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class SessionMeta:
    id: str
    provider: str
    model: str
    cwd: str
    created_at: str  # ISO 8601, UTC
    updated_at: str  # ISO 8601, UTC
    usage: Usage = field(default_factory=Usage)  # cumulative over the session
    job: JobMark | None = None
    compactions: tuple[CompactionRecord, ...] = ()
    # The skills the session's requests invoked, by name, first use first.
    skills: tuple[str, ...] = ()
    # How the openai provider signed in ("subscription"), so a resumed run
    # signs in the same way; None: the default, an API key.
    openai_auth: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    meta: SessionMeta
    messages: tuple[Message, ...] = ()


def start_job(session: Session, job_id: str) -> Session:
    """`session` marked as the starting point of job `job_id`, not yet finished."""
    last = session.messages[-1] if session.messages else None
    mark = JobMark(
        id=job_id,
        finished=False,
        messages=len(session.messages),
        blocks=len(last.content) if last is not None else 0,
        usage=session.meta.usage,
    )
    return replace(session, meta=replace(session.meta, job=mark))


def before_job(session: Session) -> Session:
    """`session` as it stood before its marked job began (unmarked); as is if it has no mark."""
    mark = session.meta.job
    if mark is None:
        return session
    kept = list(session.messages[: mark.messages])
    if kept:
        # The job's first text may have joined this message: keep what it had before.
        kept[-1] = replace(kept[-1], content=kept[-1].content[: mark.blocks])
    return Session(replace(session.meta, usage=mark.usage, job=None), tuple(kept))


def utc_timestamp(now: datetime | None = None) -> str:
    """`now` (default: the current time) as ISO 8601 UTC, e.g. `2026-11-29T23:24:38Z`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class SessionStore:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.directory = home / "sessions"

    def new_id(self) -> str:
        """A fresh id such as `20261129T232438Z-1a2b3c4d`: sorts by creation time."""
        while True:
            session_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
            if not self._path(session_id).exists():
                return session_id

    def path(self, session_id: str) -> Path:
        """Where session `session_id` lives; raise `SessionError` for an unsafe id."""
        _check_id(session_id)
        return self._path(session_id)

    def save(self, session: Session) -> None:
        """Write `session` whole, replacing any earlier save atomically."""
        path = self.path(session.meta.id)
        try:
            self._make_directory()
        except OSError as exc:
            raise SessionError(f"cannot save session to {path}: {_reason(exc)}") from exc
        _write_atomically(path, session)

    def children_directory(self, session_id: str) -> Path:
        """Where the transcripts of session `session_id`'s subagents are kept."""
        _check_id(session_id)
        return self.directory / f"{session_id}.children"

    def child_path(self, session_id: str, number: int) -> Path:
        """Where subagent `number`'s transcript of session `session_id` is kept."""
        return self.children_directory(session_id) / f"{number}{_SUFFIX}"

    def child_numbers(self, session_id: str) -> list[int]:
        """The subagents of session `session_id` whose transcripts are saved, in order."""
        try:
            entries = list(self.children_directory(session_id).iterdir())
        except FileNotFoundError:
            return []
        return sorted(int(e.stem) for e in entries if e.suffix == _SUFFIX and e.stem.isdigit())

    def child_count(self, session_id: str) -> int:
        """How many subagent transcripts session `session_id` has saved."""
        return len(self.child_numbers(session_id))

    def save_child(self, session_id: str, number: int, child: Session) -> Path:
        """Write subagent `number`'s transcript beside session `session_id`, atomically."""
        directory = self.children_directory(session_id)
        path = self.child_path(session_id, number)
        try:
            self._make_directory()
            if not directory.is_dir():
                directory.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise SessionError(f"cannot save session to {path}: {_reason(exc)}") from exc
        _write_atomically(path, child)
        return path

    def load_child(self, session_id: str, number: int) -> Session:
        """Subagent `number`'s transcript, as `save_child` wrote it."""
        path = self.child_path(session_id, number)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SessionConfigError(f"cannot read session file {path}: {_reason(exc)}") from exc
        return _parse(raw, path, f"{session_id}.{number}")

    def load(self, session_id: str) -> Session:
        path = self.path(session_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise SessionConfigError(
                f"no session '{session_id}' in {self.directory} (check --resume)"
            ) from None
        except OSError as exc:
            raise SessionConfigError(f"cannot read session file {path}: {_reason(exc)}") from exc
        return _parse(raw, path, session_id)

    def latest(self) -> str | None:
        """The id of the most recently saved session, or None when there is none."""
        try:
            candidates = [
                (entry.stat().st_mtime_ns, entry.stem)
                for entry in self.directory.iterdir()
                if entry.suffix == _SUFFIX and _ID_RE.fullmatch(entry.stem) and entry.is_file()
            ]
        except FileNotFoundError:
            return None
        return max(candidates)[1] if candidates else None

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}{_SUFFIX}"

    def _make_directory(self) -> None:
        # Sessions hold prompts and tool output: keep them private to the user.
        for directory in (self.home, self.directory):
            if not directory.is_dir():
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                directory.chmod(0o700)


def _write_atomically(path: Path, session: Session) -> None:
    """Write `session` to `path` through a temporary file renamed into place."""
    try:
        # Same directory as the target, so os.replace is a rename; mode 0600.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    except OSError as exc:
        raise SessionError(f"cannot save session to {path}: {_reason(exc)}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            _write_line(out, _meta_to_json(session.meta))
            for message in session.messages:
                _write_line(out, {"type": "message", **message_to_json(message)})
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise SessionError(f"cannot save session to {path}: {_reason(exc)}") from exc
        raise
    fsync_directory(path.parent)


def _check_id(session_id: str) -> None:
    if not _ID_RE.fullmatch(session_id) or ".." in session_id:
        raise SessionConfigError(
            f"invalid session id {_show(session_id)}: use letters, digits, '.', '_' and '-' only"
        )


def _meta_to_json(meta: SessionMeta) -> JSONObject:
    obj: JSONObject = {
        "type": "session",
        "version": FORMAT_VERSION,
        "id": meta.id,
        "provider": meta.provider,
        "model": meta.model,
        "cwd": meta.cwd,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "usage": dict(meta.usage.as_dict()),
    }
    if meta.job is not None:
        obj["job"] = {
            "id": meta.job.id,
            "finished": meta.job.finished,
            "messages": meta.job.messages,
            "blocks": meta.job.blocks,
            "usage": dict(meta.job.usage.as_dict()),
        }
    if meta.compactions:
        obj["compactions"] = [
            {
                "at": c.at,
                "stage": c.stage,
                "tokens_before": c.tokens_before,
                "tokens_after": c.tokens_after,
            }
            for c in meta.compactions
        ]
    if meta.skills:
        obj["skills"] = list(meta.skills)
    if meta.openai_auth is not None:
        obj["openai_auth"] = meta.openai_auth
    return obj


def _write_line(out: TextIO, obj: JSONObject) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


class _Corrupt(Exception):
    """What is wrong with one line; `_parse` adds the file and line number."""


def _parse(raw: bytes, path: Path, session_id: str) -> Session:
    meta: SessionMeta | None = None
    messages: list[Message] = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = _decode_line(line)
            if meta is None:
                meta = _meta_from_json(obj, session_id)
            elif obj.get("type") == "message":
                messages.append(message_from_json(obj))
            else:
                raise _Corrupt(f"expected a message, got type {_show(obj.get('type'))}")
        except (_Corrupt, CodecError) as exc:
            raise SessionConfigError(f"corrupt session file {path} line {lineno}: {exc}") from None
    if meta is None:
        raise SessionConfigError(
            f"corrupt session file {path} line 1: empty file, no session metadata"
        )
    problem = _check_mark(meta.job, messages)
    if problem:
        raise SessionConfigError(f"corrupt session file {path} line 1: {problem}")
    return Session(meta=meta, messages=tuple(messages))


def _decode_line(line: bytes) -> dict[str, object]:
    try:
        obj = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Corrupt("not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise _Corrupt(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise _Corrupt("expected a JSON object")
    return obj


def _meta_from_json(obj: dict[str, object], session_id: str) -> SessionMeta:
    if obj.get("type") != "session":
        raise _Corrupt(f"expected session metadata, got type {_show(obj.get('type'))}")
    if obj.get("version") != FORMAT_VERSION:
        raise _Corrupt(f"unsupported session format version {_show(obj.get('version'))}")
    values: dict[str, str] = {}
    for name in _META_FIELDS:
        value = obj.get(name)
        if not isinstance(value, str):
            raise _Corrupt(f"session {name} must be a string, got {_show(value)}")
        values[name] = value
    if values["id"] != session_id:
        raise _Corrupt(f"session id {_show(values['id'])} does not match the file name")
    return SessionMeta(
        id=values["id"],
        provider=values["provider"],
        model=values["model"],
        cwd=values["cwd"],
        created_at=values["created_at"],
        updated_at=values["updated_at"],
        usage=usage_from_json(obj.get("usage", {})),
        job=_mark_from_json(obj["job"]) if obj.get("job") is not None else None,
        compactions=_compactions_from_json(obj.get("compactions", [])),
        skills=_skills_from_json(obj.get("skills", [])),
        openai_auth=_optional_text(obj, "openai_auth"),
    )


def _optional_text(obj: Mapping[str, object], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise _Corrupt(f"session {name} must be a string, got {_show(value)}")
    return value


def _skills_from_json(obj: object) -> tuple[str, ...]:
    if not isinstance(obj, list) or not all(isinstance(name, str) for name in obj):
        raise _Corrupt(f"session skills must be a list of names, got {_show(obj)}")
    return tuple(obj)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _compactions_from_json(obj: object) -> tuple[CompactionRecord, ...]:
    if not isinstance(obj, list):
        raise _Corrupt(f"session compactions must be a list, got {_show(obj)}")
    records = []
    for item in obj:
        if not isinstance(item, dict):
            raise _Corrupt(f"a compaction must be an object, got {_show(item)}")
        at, stage = item.get("at"), item.get("stage")
        before, after = item.get("tokens_before"), item.get("tokens_after")
        if not (isinstance(at, str) and isinstance(stage, str)):
            raise _Corrupt("a compaction needs `at` and `stage` strings")
        if not (_count(before) and _count(after)):
            raise _Corrupt("a compaction's token counts must be integers")
        assert isinstance(before, int)
        assert isinstance(after, int)
        records.append(CompactionRecord(at, stage, before, after))
    return tuple(records)


def _mark_from_json(obj: object) -> JobMark:
    if not isinstance(obj, dict):
        raise _Corrupt(f"session job must be an object, got {_show(obj)}")
    job_id, finished = obj.get("id"), obj.get("finished")
    if not isinstance(job_id, str):
        raise _Corrupt(f"session job id must be a string, got {_show(job_id)}")
    if not isinstance(finished, bool):
        raise _Corrupt(f"session job finished must be true or false, got {_show(finished)}")
    counts: dict[str, int] = {}
    for name in ("messages", "blocks"):
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _Corrupt(f"session job {name} must be a non-negative integer, got {_show(value)}")
        counts[name] = value
    return JobMark(
        id=job_id,
        finished=finished,
        messages=counts["messages"],
        blocks=counts["blocks"],
        usage=usage_from_json(obj.get("usage", {}), "job.usage"),
    )


def _check_mark(mark: JobMark | None, messages: list[Message]) -> str | None:
    """What makes `mark` point outside `messages`, if anything."""
    if mark is None:
        return None
    if mark.messages > len(messages):
        return f"session job starts after message {mark.messages}, the file has {len(messages)}"
    had = len(messages[mark.messages - 1].content) if mark.messages else 0
    if mark.blocks > had:
        return f"session job starts after block {mark.blocks} of a message of {had}"
    return None


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _show(value: object, limit: int = 60) -> str:
    """A short, single-line rendering of `value` for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
