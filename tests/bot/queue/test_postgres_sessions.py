"""Thread sessions in the PostgreSQL queue: saved only under a held lease, loaded whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from bot.jobs import Conclusion, JobOutcome
from bot.queue import PostgresQueue, SessionFiles
from bot.queue.pg_schema import MIGRATIONS, SCHEMA_VERSION, Migrated, migrate
from tests.bot.queue.factories import FakeClock, enqueue_one

LEASE = 60.0
SESSION = "octo-hello-1-0123456789abcdef"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def queue(postgres_url: str, clock: FakeClock) -> AsyncIterator[PostgresQueue]:
    async with PostgresQueue(postgres_url, clock=clock) as opened:
        yield opened


async def test_a_session_saved_by_the_lease_holder_loads_back_byte_for_byte(
    queue: PostgresQueue,
) -> None:
    job_id = await enqueue_one(queue, "d1")
    claimed = await queue.claim("a", LEASE)
    assert claimed is not None
    assert await queue.load_session(SESSION) is None
    files = SessionFiles(b'{"type":"session"}\n\xe2\x9c\x93\n', ((1, b"one\n"), (2, b"two\n")))

    assert await queue.save_session(job_id, "a", SESSION, files) is True
    assert await queue.load_session(SESSION) == files
    # A later save replaces the children too: none is left from before.
    fewer = SessionFiles(b"again\n", ((2, b"two, later\n"),))
    assert await queue.save_session(job_id, "a", SESSION, fewer) is True
    assert await queue.load_session(SESSION) == fewer
    assert await queue.load_session("another-session") is None


async def test_a_zombie_cannot_overwrite_the_session_of_the_worker_that_took_its_job(
    queue: PostgresQueue, clock: FakeClock
) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await queue.claim("zombie", LEASE) is not None
    clock.advance(LEASE + 1)
    assert await queue.requeue_expired() == [job_id]
    assert await queue.claim("b", LEASE) is not None
    newer = SessionFiles(b"b's session\n", ((1, b"b's child\n"),))
    assert await queue.save_session(job_id, "b", SESSION, newer) is True

    assert await queue.save_session(job_id, "zombie", SESSION, SessionFiles(b"stale\n")) is False
    assert await queue.load_session(SESSION) == newer


async def test_no_save_once_the_job_is_finished_or_for_a_job_never_claimed(
    queue: PostgresQueue,
) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await queue.save_session(job_id, "a", SESSION, SessionFiles(b"early\n")) is False
    assert await queue.claim("a", LEASE) is not None
    await queue.finish(job_id, "a", JobOutcome(conclusion=Conclusion.NO_CHANGES))
    assert await queue.save_session(job_id, "a", SESSION, SessionFiles(b"late\n")) is False
    assert await queue.save_session(999, "a", SESSION, SessionFiles(b"unknown\n")) is False
    assert await queue.load_session(SESSION) is None


def test_a_version_1_database_migrates_to_the_sessions_tables_keeping_its_jobs(
    postgres_empty_url: str,
) -> None:
    with psycopg.connect(postgres_empty_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE neo_schema (version integer NOT NULL)")
        for statement in MIGRATIONS[1]:
            conn.execute(statement.encode())
        conn.execute("INSERT INTO neo_schema (version) VALUES (1)")
        conn.execute(
            "INSERT INTO neo_jobs (delivery_id, dedupe_key, kind, thread_key, request, state,"
            " created_at, updated_at) VALUES ('d', 'k', 'run', 't', '{}', 'queued', 0, 0)"
        )

    assert migrate(postgres_empty_url) == Migrated(before=1, after=SCHEMA_VERSION)

    with psycopg.connect(postgres_empty_url) as conn:
        assert conn.execute("SELECT count(*) FROM neo_jobs").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM neo_sessions").fetchone() == (0,)
