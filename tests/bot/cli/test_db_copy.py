"""`neo db copy` as a real process: a real SQLite queue and session files into a real
PostgreSQL database. The refusals' tables run most rows through bot.cli.main.main in
the test's process, checked alike (tests/hostile/neo_cli.py), and a few as processes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import PostgresQueue, SessionFiles, SpendRecord, SqliteQueue, sqlite_url
from bot.worker.sessions import write_session_files
from tests.bot.queue.factories import FakeClock, make_request
from tests.neo_cli import neo_in_process

NEO = Path(sys.executable).with_name("neo")
PASSWORD = "hunter2-secret"
UNREACHABLE = f"postgresql://neo:{PASSWORD}@127.0.0.1:1/neo"
SESSION = "octo-hello-1-0123456789abcdef"
FILES = SessionFiles(b'{"type":"session"}\n', ((1, b"child one\n"), (2, b"child two\n")))


def neo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NEO), "db", "copy", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_environ(env),
    )


def _environ(env: dict[str, str] | None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("NEO_DATA_DIR", "NEO_QUEUE_URL")}
    return environ | (env or {})


class Here:
    """`neo db copy` and `neo jobs list` through bot.cli.main.main in the test's process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]):
        self.monkeypatch, self.capfd = monkeypatch, capfd

    def __call__(self, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        done = neo_in_process(
            argv, _environ(None), cwd=cwd, monkeypatch=self.monkeypatch, capfd=self.capfd
        )
        return subprocess.CompletedProcess(
            ["neo", *argv], done.returncode, done.stdout, done.stderr
        )


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> Here:
    return Here(monkeypatch, capfd)


async def old_service(data: Path) -> dict[str, int]:
    """What a stopped single-host service leaves: jobs in every state, spend, sessions."""
    clock = FakeClock()
    ids: dict[str, int] = {}
    async with SqliteQueue(data / "neo.db", clock=clock) as queue:
        for name in ("done", "left-running", "waiting"):
            result = await queue.enqueue(
                f"delivery-{name}", [make_request(f"delivery-{name}", number=len(ids) + 1)]
            )
            ids[name] = result.job_ids[0]
            if name != "waiting":
                job = await queue.claim("old-host", 60.0)
                assert job is not None
                assert job.id == ids[name]
        await queue.finish(ids["done"], "old-host", JobOutcome(conclusion=Conclusion.NO_CHANGES))
        await queue.enqueue("delivery-empty", [])
        await queue.record_spend(
            [SpendRecord(ids["done"], "Octo/Hello", 42, "claude", clock.now, 0.25, 100, 20)]
        )
    write_session_files(data, SESSION, FILES)
    write_session_files(data, "octo-hello-2-fedcba9876543210", SessionFiles(b"two\n"))
    (data / "sessions" / "..jsonl").write_bytes(b"not a session name")
    return ids


def test_it_moves_jobs_sessions_and_spend_and_a_second_copy_is_refused(
    tmp_path: Path, postgres_url: str
) -> None:
    data = tmp_path / "data"
    ids = asyncio.run(old_service(data))

    done = neo(sqlite_url(data / "neo.db"), postgres_url)

    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "copied 1 queued jobs, 1 left running (retried once their lease expires),"
        " 1 finished jobs (their dedupe keys), 4 deliveries, 2 thread sessions"
        " and 1 spend records\n"
    )
    assert postgres_url not in done.stdout + done.stderr

    async def check() -> None:
        clock = FakeClock()  # the old service's time
        async with PostgresQueue(postgres_url, clock=clock) as queue:
            jobs = {job.id: job for job in await queue.list()}
            assert jobs[ids["done"]].state is JobState.SUCCEEDED
            assert jobs[ids["waiting"]].state is JobState.QUEUED
            # Its holder died with the old service: retried as any dead worker's job.
            left = jobs[ids["left-running"]]
            assert (left.state, left.worker, left.attempts) == (JobState.RUNNING, "old-host", 1)
            clock.advance(61.0)
            assert await queue.requeue_expired() == [ids["left-running"]]
            # Redeliveries, and new deliveries of old comments, still dedupe.
            again = await queue.enqueue("delivery-waiting", [make_request("delivery-waiting")])
            assert again.duplicate
            old_key = make_request("delivery-done")
            fresh = await queue.enqueue("a-new-delivery", [old_key])
            assert fresh.existing == (ids["done"],)
            newer = await queue.enqueue("newer", [make_request("newer", number=9)])
            assert newer.created[0] > max(ids.values())
            assert await queue.load_session(SESSION) == FILES
            assert await queue.load_session("octo-hello-2-fedcba9876543210") == SessionFiles(
                b"two\n"
            )
            assert await queue.spent_since(0.0, repository="octo/hello") == 0.25

    asyncio.run(check())
    # Analysed on the way in: procrastinate's fetch is planned from what the
    # statistics say of the copied jobs.
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT relname, reltuples FROM pg_class"
            " WHERE relname IN ('neo_jobs', 'procrastinate_jobs') ORDER BY relname"
        ).fetchall()
    assert rows == [("neo_jobs", 3.0), ("procrastinate_jobs", 3.0)]

    # DEST left out: NEO_QUEUE_URL's, so no password is in the process list.
    twice = neo(sqlite_url(data / "neo.db"), env={"NEO_QUEUE_URL": postgres_url})
    assert twice.returncode == 2
    assert twice.stdout == ""
    assert twice.stderr == (
        "neo: error: the destination already has jobs;"
        " `neo db copy` moves a queue into an empty one (NEO_QUEUE_URL)\n"
    )


def test_sessions_come_from_neo_data_dir_when_the_queue_file_is_elsewhere(
    tmp_path: Path, postgres_url: str
) -> None:
    asyncio.run(old_service(tmp_path / "queue-only"))
    sessions_home = tmp_path / "elsewhere"
    write_session_files(sessions_home, "only-here", SessionFiles(b"here\n"))

    done = neo(
        sqlite_url(tmp_path / "queue-only" / "neo.db"),
        postgres_url,
        env={"NEO_DATA_DIR": str(sessions_home)},
    )

    assert done.returncode == 0, done.stderr
    assert "1 thread sessions" in done.stdout

    async def check() -> None:
        async with PostgresQueue(postgres_url) as queue:
            assert await queue.load_session("only-here") == SessionFiles(b"here\n")
            assert await queue.load_session(SESSION) is None

    asyncio.run(check())


# Real (a process): the first refusal, and libpq's error about a URL, password and all.
@pytest.mark.parametrize(
    ("source", "dest", "message", "real"),
    [
        (
            UNREACHABLE,
            "postgres",
            "`neo db copy` copies from a sqlite:///PATH queue (SOURCE)",
            True,
        ),
        (
            "sqlite",
            UNREACHABLE.replace("postgresql", "mysql"),
            "copies into a postgresql://",
            False,
        ),
        ("sqlite", UNREACHABLE, "cannot reach the queue database: ", False),
        # libpq quotes a URL it cannot parse, password and all.
        (
            "sqlite",
            f"postgresql://neo:{PASSWORD}@[db/neo",
            "cannot reach the queue database: ",
            True,
        ),
        # No DEST, and no NEO_QUEUE_URL to stand in for it.
        ("sqlite", "omitted", "no destination: set NEO_QUEUE_URL or pass DEST", False),
        ("sqlite", "empty", "the destination has schema version 0; this Neo needs", False),
        ("missing", "postgres", "no queue database at ", False),
        ("not-a-queue", "postgres", "is not a Neo queue database (SOURCE)", False),
    ],
)
def test_refusals_are_one_line_without_a_url_or_a_password(
    source: str,
    dest: str,
    message: str,
    real: bool,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    here: Here,
) -> None:
    data = tmp_path / "data"
    if source == "sqlite":
        asyncio.run(old_service(data))
    if source == "not-a-queue":
        data.mkdir()
        with sqlite3.connect(data / "neo.db") as conn:
            conn.execute("CREATE TABLE t (x)")
    source_url = source if "://" in source else sqlite_url(data / "neo.db")
    if dest == "postgres":
        dest = request.getfixturevalue("postgres_url")
    elif dest == "empty":
        dest = request.getfixturevalue("postgres_empty_url")

    args = (source_url,) if dest == "omitted" else (source_url, dest)
    done = neo(*args) if real else here("db", "copy", *args, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("neo: error: ")
    assert message in done.stderr
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert PASSWORD not in done.stderr
    assert dest not in done.stderr


# Each a change to the job row `old_service` finished, that no Neo wrote.
UNREADABLE = "has a request or a result this Neo cannot read"
UNREADABLE_JOBS = [
    pytest.param(
        "state = 'paused'",
        "has the state 'paused', which this Neo does not know",
        id="unknown-state",
    ),
    pytest.param("request = 'not json'", UNREADABLE, id="request-not-json"),
    pytest.param("request = '{}'", UNREADABLE, id="request-empty"),
    pytest.param("result = '[1]'", UNREADABLE, id="result-not-an-object"),
]


@pytest.mark.parametrize(("change", "message"), UNREADABLE_JOBS)
def test_a_job_the_destination_could_not_read_stops_the_copy_before_any_write(
    change: str, message: str, tmp_path: Path, postgres_url: str, here: Here
) -> None:
    # The first row as processes, the others in the test's process.
    real = change == UNREADABLE_JOBS[0].values[0]
    data = tmp_path / "data"
    ids = asyncio.run(old_service(data))
    with sqlite3.connect(data / "neo.db") as conn:
        conn.execute(f"UPDATE jobs SET {change} WHERE id = ?", (ids["done"],))

    source = sqlite_url(data / "neo.db")
    done = (
        neo(source, postgres_url)
        if real
        else here("db", "copy", source, postgres_url, cwd=tmp_path)
    )

    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"neo: error: job {ids['done']} in {data / 'neo.db'} {message};"
        " nothing was copied (SOURCE)\n"
    )
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM neo_jobs").fetchone() == (0,)
    argv = ("jobs", "list", "--queue-url", postgres_url)
    if real:
        listed = subprocess.run(
            [str(NEO), *argv], capture_output=True, text=True, timeout=60, check=False
        )
    else:
        listed = here(*argv, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "no jobs\n"
