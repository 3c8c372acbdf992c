"""The PostgreSQL queue's own concerns: migrations, the start-up check, URLs, wake-ups.

Its semantics, shared with SQLite, are in test_contract.py.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psycopg
import pytest

from bot.queue import (
    PostgresQueue,
    QueueError,
    SqliteQueue,
    WakingQueue,
    is_postgres_url,
    open_queue,
    wakeup_of,
)
from bot.queue.pg_schema import SCHEMA_VERSION, Migrated, check_schema, migrate
from runner.errors import ConfigError
from tests.bot.queue.factories import enqueue_one, make_request

# Nothing listens on port 1; the password must never reach a message.
UNREACHABLE = "postgresql://neo:hunter2-secret@127.0.0.1:1/neo"


def test_migrate_creates_the_schema_once(postgres_empty_url: str) -> None:
    assert migrate(postgres_empty_url) == Migrated(before=0, after=SCHEMA_VERSION)
    assert migrate(postgres_empty_url) == Migrated(before=SCHEMA_VERSION, after=SCHEMA_VERSION)
    check_schema(postgres_empty_url)


def test_two_hosts_migrating_at_once_both_succeed(postgres_empty_url: str) -> None:
    results: list[Migrated] = []
    threads = [
        threading.Thread(target=lambda: results.append(migrate(postgres_empty_url)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # One of them did the work; the others waited for it and found nothing to do.
    assert sorted(result.before for result in results) == [0] + [SCHEMA_VERSION] * 3


def test_a_database_behind_is_refused_naming_the_command(postgres_empty_url: str) -> None:
    with pytest.raises(ConfigError) as error:
        open_queue(postgres_empty_url, source="--queue-url")
    assert str(error.value) == (
        f"the queue database has schema version 0; this Neo needs {SCHEMA_VERSION}:"
        " run `neo db migrate` (--queue-url)"
    )


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        conn.execute("UPDATE neo_schema SET version = 99")
    for attempt in (check_schema, migrate):
        with pytest.raises(ConfigError, match="schema version 99; this Neo knows up to"):
            attempt(postgres_url)


def test_an_unreachable_database_is_one_line_without_the_password() -> None:
    for attempt in (open_queue, migrate):
        with pytest.raises(ConfigError) as error:
            attempt(UNREACHABLE)
        message = str(error.value)
        assert message.startswith("cannot reach the queue database: ")
        assert message.endswith("(NEO_QUEUE_URL)")
        assert "hunter2" not in message
        assert "\n" not in message


async def test_a_queue_whose_database_went_away_fails_with_one_line() -> None:
    queue = PostgresQueue(UNREACHABLE, listen=False, connect_timeout=0.5)
    with pytest.raises(QueueError) as error:
        await queue.enqueue("d1", [make_request("d1")])
    assert "hunter2" not in str(error.value)
    assert "\n" not in str(error.value)
    await queue.close()


async def test_open_queue_selects_postgres_by_url(postgres_url: str) -> None:
    assert is_postgres_url(postgres_url)
    assert is_postgres_url("postgres://db/neo")
    assert not is_postgres_url("sqlite:///neo.db")
    queue = open_queue(postgres_url)
    assert isinstance(queue, PostgresQueue)
    try:
        job_id = await enqueue_one(queue, "d1")
        assert (await queue.get(job_id)) is not None
    finally:
        await queue.close()


async def test_a_job_queued_by_another_process_wakes_the_listener(postgres_url: str) -> None:
    async with (
        PostgresQueue(postgres_url) as listening,
        PostgresQueue(postgres_url, listen=False) as other,
    ):
        # The listener's first connection sets it; wait for that, then clear.
        await asyncio.wait_for(listening.queued.wait(), 10)
        await asyncio.sleep(0.2)
        listening.queued.clear()
        await enqueue_one(other, "d1")
        await asyncio.wait_for(listening.queued.wait(), 10)


async def test_no_notification_without_a_claimable_job(postgres_url: str) -> None:
    # The control for the test above: a heartbeat makes nothing claimable.
    async with (
        PostgresQueue(postgres_url) as listening,
        PostgresQueue(postgres_url, listen=False) as other,
    ):
        job_id = await enqueue_one(other, "d1")
        await other.claim("w1", 30)
        await asyncio.wait_for(listening.queued.wait(), 10)
        await asyncio.sleep(0.3)
        listening.queued.clear()
        await other.heartbeat(job_id, "w1", 30)
        await asyncio.sleep(0.5)
        assert not listening.queued.is_set()


async def test_workers_of_every_process_wake_on_the_listeners_event(
    postgres_url: str, tmp_path: Path
) -> None:
    async with PostgresQueue(postgres_url) as shared, SqliteQueue(tmp_path / "neo.db") as local:
        # `neo serve` and `neo worker` wait on it: set by any host's job.
        assert wakeup_of(shared) is shared.queued
        assert WakingQueue(shared).queued is shared.queued
        # A SQLite queue hears only of its own process's jobs: WakingQueue's own event.
        assert wakeup_of(local) is None
        assert isinstance(WakingQueue(local).queued, asyncio.Event)
