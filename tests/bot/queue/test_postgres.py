"""The PostgreSQL queue's own concerns: migrations, the start-up check, URLs, wake-ups.

Its semantics, shared with SQLite, are in test_contract.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from procrastinate.schema import SchemaManager

from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import (
    PostgresQueue,
    QueueError,
    SqliteQueue,
    WakingQueue,
    is_postgres_url,
    open_queue,
    wakeup_of,
)
from bot.queue.pg_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Migrated,
    check_schema,
    migrate,
    procrastinate_level,
)
from bot.queue.postgres import connect_timeout_of
from runner.errors import ConfigError
from tests.bot.queue.factories import enqueue_one, make_request
from tests.postgres import PostgresServer

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


def test_version_5_keeps_one_copy_of_a_spend_record_written_twice(postgres_url: str) -> None:
    # The database as version 4 left it: spend records could be stored twice.
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP INDEX neo_spend_once")
        conn.execute("DROP TABLE neo_steers")  # version 6's
        conn.execute("DROP TABLE neo_run_logs, neo_run_events")  # version 7's
        conn.execute("UPDATE neo_schema SET version = 4")
        for at, cost in ((100.0, 2.0), (100.0, 2.0), (101.0, 1.0)):
            conn.execute(
                "INSERT INTO neo_spend (job_id, repository, installation_id, model, at,"
                " cost_usd, input_tokens, output_tokens)"
                " VALUES (1, 'octo/hello', 7, 'claude', %s, %s, 1, 1)",
                (at, cost),
            )

    assert migrate(postgres_url) == Migrated(before=4, after=SCHEMA_VERSION)

    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT at, cost_usd FROM neo_spend ORDER BY at").fetchall()
    assert rows == [(100.0, 2.0), (101.0, 1.0)]


def _version_3(url: str) -> None:
    """A database as Neo's schema version 3 left it: Neo's own tables, no procrastinate."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE neo_schema (version integer NOT NULL)")
        for version in (1, 2, 3):
            for statement in MIGRATIONS[version]:
                conn.execute(statement.encode())
        conn.execute("INSERT INTO neo_schema (version) VALUES (3)")


def _version_3_then_current(url: str, *, level: str) -> None:
    """Neo's tables at the current version beside a procrastinate schema at `level`."""
    _version_3(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for version in range(4, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[version]:
                conn.execute(statement.encode())
        conn.execute(
            "UPDATE neo_schema SET version = %s, procrastinate = %s", (SCHEMA_VERSION, level)
        )


async def test_version_3_jobs_move_into_procrastinate_with_their_states(
    postgres_empty_url: str,
) -> None:
    _version_3(postgres_empty_url)
    rows = [
        # id, thread, state, attempts, worker, lease, cancel requested
        (1, "octo/hello#1", "succeeded", 1, None, None, False),
        (2, "octo/hello#1", "running", 1, "w1", 50.0, True),
        (3, "octo/hello#1", "queued", 0, None, None, False),
        (4, "octo/hello#2", "failed", 3, None, None, False),
        (7, "octo/hello#3", "queued", 0, None, None, False),
    ]
    with psycopg.connect(postgres_empty_url, autocommit=True) as conn:
        for job_id, thread, state, attempts, worker, lease, cancel in rows:
            number = int(thread.rsplit("#", 1)[1])
            request = make_request(f"d{job_id}", number=number, dedupe_key=f"k{job_id}")
            conn.execute(
                "INSERT INTO neo_jobs (id, delivery_id, dedupe_key, kind, thread_key, request,"
                " state, attempts, created_at, updated_at, worker, lease_expires_at,"
                " cancel_requested) VALUES (%s, %s, %s, 'run', %s, %s, %s, %s, 0, 0, %s, %s, %s)",
                (
                    job_id,
                    f"d{job_id}",
                    f"k{job_id}",
                    thread,
                    json.dumps(request.to_json()),
                    state,
                    attempts,
                    worker,
                    lease,
                    cancel,
                ),
            )

    assert migrate(postgres_empty_url) == Migrated(before=3, after=SCHEMA_VERSION)
    check_schema(postgres_empty_url)

    async with PostgresQueue(postgres_empty_url, clock=lambda: 10.0, listen=False) as queue:
        states = {
            job.id: (job.state, job.attempts, job.cancel_requested) for job in await queue.list()
        }
        assert states == {
            1: (JobState.SUCCEEDED, 1, False),
            2: (JobState.RUNNING, 1, True),
            3: (JobState.QUEUED, 0, False),
            4: (JobState.FAILED, 3, False),
            7: (JobState.QUEUED, 0, False),
        }
        # Thread 1's run 2 still holds it: the claim takes thread 3's job.
        claimed = await queue.claim("w2", 30)
        assert claimed is not None
        assert claimed.id == 7
        assert (await queue.heartbeat(2, "w1", 30)).cancel_requested
        # New jobs are numbered after the moved ones.
        assert await enqueue_one(queue, "d-new", number=9) == 8
        assert await queue.retry(4)
        assert (await queue.get(4)).state is JobState.QUEUED  # type: ignore[union-attr]


def _event_triggers(url: str) -> dict[str, bool]:
    """procrastinate's event-log triggers on its jobs table, and whether each is on."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tgname, tgenabled <> 'D' FROM pg_trigger"
            " WHERE tgrelid = 'procrastinate_jobs'::regclass AND tgname LIKE '%events%'"
        ).fetchall()
    return {str(name): bool(on) for name, on in rows}


async def test_procrastinate_keeps_no_event_log_of_neos_jobs(postgres_url: str) -> None:
    assert set(_event_triggers(postgres_url)) == {
        "procrastinate_trigger_status_events_insert_v1",
        "procrastinate_trigger_status_events_update_v1",
        "procrastinate_trigger_scheduled_events_v1",
        "procrastinate_trigger_abort_requested_events_v1",
    }
    assert not any(_event_triggers(postgres_url).values())
    async with PostgresQueue(postgres_url, listen=False) as queue:
        first = await enqueue_one(queue, "d1")
        await enqueue_one(queue, "d2")
        assert (await queue.claim("w1", 30)) is not None
        assert await queue.cancel(first)
        await queue.finish(first, "w1", JobOutcome(conclusion=Conclusion.CANCELLED))
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM procrastinate_events").fetchone() == (0,)
        # The notification trigger, which wakes workers, stays on.
        notify = conn.execute(
            "SELECT tgenabled FROM pg_trigger"
            " WHERE tgname = 'procrastinate_jobs_notify_queue_job_inserted_v1'"
        ).fetchone()
    assert notify == ("O",)


def _procrastinate_schema(url: str) -> set[tuple[str, ...]]:
    """procrastinate's functions (with their arguments), columns, enum values,
    triggers and indexes in a database."""
    queries = {
        "function": "SELECT proname || '(' || pg_get_function_identity_arguments(oid) || ')'"
        " FROM pg_proc WHERE proname LIKE 'procrastinate%'",
        "column": "SELECT table_name || '.' || column_name || ' ' || data_type"
        " FROM information_schema.columns WHERE table_name LIKE 'procrastinate%'",
        "enum": "SELECT t.typname || '.' || e.enumlabel FROM pg_enum AS e"
        " JOIN pg_type AS t ON t.oid = e.enumtypid WHERE t.typname LIKE 'procrastinate%'",
        "trigger": "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'procrastinate%'",
        "index": "SELECT indexname FROM pg_indexes WHERE tablename LIKE 'procrastinate%'",
    }
    with psycopg.connect(url) as conn:
        return {(kind, str(name)) for kind, sql in queries.items() for (name,) in conn.execute(sql)}


def test_an_older_procrastinate_schema_is_refused_then_brought_up_to_date(
    postgres_server: PostgresServer, postgres_empty_url: str
) -> None:
    # procrastinate as release 3.2 left it, from its own migrations, under Neo's current version.
    older = "03.02.00_50_post_batch_defer_jobs"
    migrations = Path(SchemaManager.get_migrations_path())
    with psycopg.connect(postgres_empty_url, autocommit=True) as conn:
        for path in sorted(migrations.glob("*.sql")):
            if path.stem <= older:
                with conn.transaction():
                    conn.execute(path.read_text(encoding="utf-8").encode())
    _version_3_then_current(postgres_empty_url, level=older)

    with pytest.raises(ConfigError) as error:
        check_schema(postgres_empty_url)
    assert str(error.value) == (
        f"the queue database's procrastinate schema is at {older};"
        f" this Neo's procrastinate needs {procrastinate_level()}: run `neo db migrate`"
        " (NEO_QUEUE_URL)"
    )

    upgraded = migrate(postgres_empty_url)
    assert (upgraded.before, upgraded.after) == (SCHEMA_VERSION, SCHEMA_VERSION)
    # Release 3.3's and 3.4's, in order (and any later release's after them).
    assert upgraded.procrastinate[:3] == (
        "03.03.00_01_pre_priority_lock_fetch_job",
        "03.04.00_01_pre_add_retry_failed_job_procedure",
        "03.04.00_50_post_add_retry_failed_job_procedure",
    )
    assert upgraded.procrastinate[-1] == procrastinate_level()
    assert _event_triggers(postgres_empty_url)
    assert not any(_event_triggers(postgres_empty_url).values())
    check_schema(postgres_empty_url)
    name = urlsplit(postgres_empty_url).path.lstrip("/")
    fresh = postgres_server.create_database(f"{name}_fresh", template="template0")
    migrate(fresh)
    assert _procrastinate_schema(postgres_empty_url) == _procrastinate_schema(fresh)


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


@pytest.mark.parametrize(
    ("url", "seconds"),
    [
        ("postgresql://neo@db/neo", 10.0),
        ("postgresql://neo@db/neo?connect_timeout=2", 2.0),
        ("postgresql://neo@db/neo?connect_timeout=0", 10.0),
        ("postgresql://neo@db/neo?connect_timeout=0.5", 1.0),
        ("postgresql://neo@db/neo?connect_timeout=soon", 10.0),
        ("host=db dbname=neo connect_timeout=3", 3.0),
    ],
)
def test_the_urls_connect_timeout_bounds_every_wait_for_a_connection(
    url: str, seconds: float
) -> None:
    assert connect_timeout_of(url) == seconds


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
        # Once it listens, it hears every job queued after.
        await asyncio.wait_for(listening.listening.wait(), 10)
        listening.queued.clear()
        await enqueue_one(other, "d1")
        await asyncio.wait_for(listening.queued.wait(), 10)


async def test_no_notification_without_a_claimable_job(postgres_url: str) -> None:
    # The control for the test above: a heartbeat makes nothing claimable.
    async with (
        PostgresQueue(postgres_url) as listening,
        PostgresQueue(postgres_url, listen=False) as other,
    ):
        await asyncio.wait_for(listening.listening.wait(), 10)
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


async def _waiting_on_a_lock(url: str, pid: int) -> None:
    """Until the backend `pid` waits for a row another transaction holds."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as probe:
        for _ in range(500):
            cursor = await probe.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid <> %s"
                " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
                (pid,),
            )
            if await cursor.fetchone() is not None:
                return
            await asyncio.sleep(0.02)
    raise AssertionError("the queue's statement never waited for the other writer")


async def test_an_enqueue_picked_to_break_a_deadlock_is_sent_again(postgres_url: str) -> None:
    async with PostgresQueue(postgres_url, listen=False) as queue:
        await queue.ping()
        async with await psycopg.AsyncConnection.connect(postgres_url) as other:
            # Another writer holds delivery "z", not yet committed; the queue's
            # batch inserts "a", then waits for "z".
            await other.execute("INSERT INTO neo_deliveries (id, received_at) VALUES ('z', 0)")
            sent = asyncio.gather(
                queue.enqueue("a", [make_request("a")]), queue.enqueue("z", [make_request("z")])
            )
            await _waiting_on_a_lock(postgres_url, other.info.backend_pid)
            # The other writer now wants "a": each waits for the other, and
            # PostgreSQL aborts the statement that waited first, the queue's.
            try:
                await other.execute("INSERT INTO neo_deliveries (id, received_at) VALUES ('a', 0)")
            except psycopg.errors.DeadlockDetected:  # the other writer was picked instead
                await other.rollback()
                took = False
            else:
                await other.commit()
                took = True
            first, second = await asyncio.wait_for(sent, 30)
    # Sent again after the other writer committed, both deliveries are
    # duplicates; had the other writer been picked, both would be new.
    assert (first.duplicate, second.duplicate) == (took, took)
