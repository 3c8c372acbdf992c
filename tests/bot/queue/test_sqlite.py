"""The SQLite queue against real database files: group commit, WAL, durability, URLs.

The semantics every backend shares are in test_contract.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.queue import (
    EnqueueResult,
    SqliteQueue,
    default_queue_url,
    open_queue,
    sqlite_path,
)
from bot.queue.sqlite import SCHEMA_VERSION
from runner.errors import ConfigError
from tests.bot.queue.factories import FakeClock, enqueue_one, make_request

ROOT = Path(__file__).resolve().parents[3]
LEASE = 30.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "neo.db"


@pytest.fixture
async def queue(db: Path, clock: FakeClock) -> AsyncIterator[SqliteQueue]:
    async with SqliteQueue(db, clock=clock) as opened:
        yield opened


async def test_group_commit_under_500_concurrent_enqueues(queue: SqliteQueue) -> None:
    # 400 distinct deliveries; 100 of them sent twice at the same moment,
    # so duplicates meet inside one batch.
    ids = [f"delivery-{n}" for n in range(400)]
    sent = ids + ids[:100]
    random.Random(4).shuffle(sent)
    before = queue.stats

    results = await asyncio.gather(*(queue.enqueue(d, [make_request(d)]) for d in sent))

    outcomes: dict[str, list[EnqueueResult]] = {}
    for delivery_id, result in zip(sent, results, strict=True):
        outcomes.setdefault(delivery_id, []).append(result)
    for delivery_id, seen in outcomes.items():
        flags = sorted(result.duplicate for result in seen)
        assert flags == [False] + [True] * (len(seen) - 1), delivery_id
    job_ids = [job_id for result in results for job_id in result.job_ids]
    assert len(job_ids) == len(set(job_ids)) == 400
    stats = queue.stats
    assert stats.writes - before.writes == 500
    assert stats.commits - before.commits < 500  # batched, some at least

    stored = await queue.list(limit=1000)
    assert sorted(job.id for job in stored) == sorted(job_ids)
    assert Counter(job.request.delivery_id for job in stored) == Counter(dict.fromkeys(ids, 1))


async def test_one_failing_write_does_not_fail_its_batch(queue: SqliteQueue) -> None:
    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO deliveries (id, received_at) VALUES ('half-done', 0)")
        raise RuntimeError("boom")

    ids = [f"d{n}" for n in range(50)]
    outcomes = await asyncio.gather(
        *(queue.enqueue(d, [make_request(d)]) for d in ids[:25]),
        queue._write(broken),
        *(queue.enqueue(d, [make_request(d)]) for d in ids[25:]),
        return_exceptions=True,
    )
    assert [type(outcome).__name__ for outcome in outcomes].count("RuntimeError") == 1
    assert len(await queue.list()) == 50
    # The failing write was undone: its delivery id is free.
    assert not (await queue.enqueue("half-done", [])).duplicate


def _rows_in_database_file(db: Path) -> int:
    """Jobs in the main database file alone: what checkpoints have copied out of the WAL."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?immutable=1", uri=True)) as conn:
        try:
            (count,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
        except sqlite3.OperationalError:  # not even the schema is there yet
            return 0
        return int(count)


async def test_the_wal_is_checkpointed_in_the_background(db: Path) -> None:
    # Far below the writer's own checkpoint threshold: only the background
    # checkpointer moves these rows into the database file.
    async with SqliteQueue(db, checkpoint_every=0.05) as queue:
        await asyncio.gather(*(queue.enqueue(f"d{n}", [make_request(f"d{n}")]) for n in range(40)))
        for _ in range(200):
            if _rows_in_database_file(db) == 40:
                break
            await asyncio.sleep(0.05)
        assert _rows_in_database_file(db) == 40


async def test_without_checkpoints_the_rows_stay_in_the_wal(db: Path) -> None:
    # The control for the test above: a checkpointer that never runs in time.
    async with SqliteQueue(db, checkpoint_every=3600) as queue:
        await asyncio.gather(*(queue.enqueue(f"d{n}", [make_request(f"d{n}")]) for n in range(40)))
        await asyncio.sleep(0.3)
        assert _rows_in_database_file(db) == 0
        assert len(await queue.list()) == 40


async def test_the_file_stays_in_wal_at_the_current_version(db: Path) -> None:
    # Reopening keeps the jobs: test_contract.py, on every backend.
    async with SqliteQueue(db) as queue:
        await enqueue_one(queue, "d1")
    async with SqliteQueue(db) as queue:
        assert len(await queue.list()) == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_new_database_numbers_its_jobs_from_first_job_id(db: Path) -> None:
    async with SqliteQueue(db, first_job_id=9_876_543_210_042) as queue:
        first = await enqueue_one(queue, "d1")
        second = await enqueue_one(queue, "d2", number=2)
    assert (first, second) == (9_876_543_210_042, 9_876_543_210_043)
    # An existing database goes on from its last id, whatever the option says.
    async with SqliteQueue(db, first_job_id=5) as queue:
        assert await enqueue_one(queue, "d3", number=3) == second + 1
        assert (await queue.get(first)) is not None
    with pytest.raises(ValueError, match="first_job_id must be at least 1"):
        SqliteQueue(db, first_job_id=0)


def test_newer_schema_is_refused(db: Path) -> None:
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(ConfigError, match="schema version 99"):
        SqliteQueue(db)


def test_a_file_that_is_not_a_database_is_one_clear_error(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_text("hello, not sqlite\n" * 100)
    with pytest.raises(ConfigError, match=f"cannot open the queue database {db}"):
        SqliteQueue(db)


def test_open_queue_reads_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "nested" / "dir" / "neo.db"
    assert sqlite_path(f"sqlite:///{absolute}") == absolute
    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///relative/neo.db") == tmp_path / "relative" / "neo.db"

    queue = open_queue(f"sqlite:///{absolute}")
    assert absolute.exists()
    asyncio.run(queue.close())


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://u:secret@localhost", "unsupported queue URL scheme 'redis'"),
        ("neo.db", "not a URL"),
        ("sqlite://", "sqlite:///PATH"),
        ("sqlite:///:memory:", "needs a file path"),
        ("sqlite:///neo.db?mode=ro", "needs a file path"),
    ],
)
def test_open_queue_refuses_other_urls(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        open_queue(url)
    assert "secret" not in str(error.value)
    assert "\n" not in str(error.value)


def test_open_queue_without_create_wants_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no queue database at"):
        open_queue(f"sqlite:///{tmp_path}/missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_default_queue_url(tmp_path: Path) -> None:
    assert default_queue_url({"NEO_QUEUE_URL": "sqlite:///x.db"}) == "sqlite:///x.db"
    assert default_queue_url({"NEO_DATA_DIR": str(tmp_path)}) == f"sqlite:///{tmp_path}/neo.db"
    assert default_queue_url({"NEO_HOME": str(tmp_path)}) == f"sqlite:///{tmp_path}/neo.db"
    assert default_queue_url({}) == f"sqlite:///{Path.home()}/.neo/neo.db"
