"""Spend records on every backend: recorded durably, summed per window; SQLite's migration."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.queue import SpendLine, SpendRecord, SqliteQueue
from bot.queue.sqlite import _MIGRATIONS, _SCHEMA, SCHEMA_VERSION
from tests.bot.queue.conftest import OpenBackend

DAY = datetime(2025, 3, 14, tzinfo=UTC).timestamp()


def spent(job_id: int, at: float, cost: float, **fields: object) -> SpendRecord:
    values: dict[str, object] = {
        "repository": "Octo/Hello",
        "installation_id": 7,
        "model": "claude-sonnet-5-5",
        "input_tokens": 1000,
        "output_tokens": 100,
    } | fields
    return SpendRecord(job_id=job_id, at=at, cost_usd=cost, **values)  # type: ignore[arg-type]


async def test_spend_is_summed_per_repository_and_installation_from_the_window_start(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue:
        await queue.record_spend(
            [
                spent(1, DAY - 1, 5.0),  # the day before: outside the window
                spent(2, DAY, 1.25),
                spent(3, DAY + 3600, 2.0, repository="octo/other"),
                spent(4, DAY + 7200, 4.0, repository="elsewhere/x", installation_id=8),
            ]
        )
        assert await queue.spent_since(DAY, repository="octo/hello") == 1.25
        assert await queue.spent_since(DAY - 10, repository="OCTO/HELLO") == 6.25
        assert await queue.spent_since(DAY, installation_id=7) == 3.25
        assert await queue.spent_since(DAY, installation_id=8) == 4.0
        assert await queue.spent_since(DAY, installation_id=9) == 0.0
        with pytest.raises(ValueError, match="exactly one"):
            await queue.spent_since(DAY)


async def test_a_restart_keeps_the_spend(open_backend: OpenBackend) -> None:
    async with open_backend() as queue:
        await queue.record_spend([spent(1, DAY + 5, 3.5)])
    async with open_backend() as reopened:
        assert await reopened.spent_since(DAY, repository="octo/hello") == 3.5


async def test_a_record_written_again_is_stored_once(open_backend: OpenBackend) -> None:
    # A worker that lost the answer to its write writes the same records again;
    # a retried attempt records what the earlier one's report says it spent.
    first = [spent(1, DAY + 5, 3.5), spent(1, DAY + 5, 0.25, model="gpt-5")]
    async with open_backend() as queue:
        await queue.record_spend(first)
        await queue.record_spend(first)
        await queue.record_spend([first[1]])
        # The same job and model at another moment is another record (another attempt).
        await queue.record_spend([spent(1, DAY + 90, 1.0)])
        assert await queue.spent_since(DAY, repository="octo/hello") == 4.75
        lines = await queue.spend(DAY)
    assert [(line.model, line.jobs, line.cost_usd) for line in lines] == [
        ("claude-sonnet-5-5", 1, 4.5),
        ("gpt-5", 1, 0.25),
    ]


async def test_spend_lines_are_per_utc_day_repository_and_model_newest_first(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue:
        await queue.record_spend(
            [
                spent(1, DAY - 60, 1.0),
                spent(2, DAY + 60, 2.0),
                spent(2, DAY + 61, 0.5, model="gpt-5", input_tokens=10, output_tokens=1),
                spent(3, DAY + 120, 3.0),
                spent(4, DAY + 180, 9.0, repository="octo/other"),
            ]
        )
        lines = await queue.spend(DAY - 86_400)
        filtered = await queue.spend(DAY, repository="octo/HELLO")
    assert lines == [
        SpendLine("2025-03-14", "octo/hello", "claude-sonnet-5-5", 2, 5.0, 2000, 200),
        SpendLine("2025-03-14", "octo/hello", "gpt-5", 1, 0.5, 10, 1),
        SpendLine("2025-03-14", "octo/other", "claude-sonnet-5-5", 1, 9.0, 1000, 100),
        SpendLine("2025-03-13", "octo/hello", "claude-sonnet-5-5", 1, 1.0, 1000, 100),
    ]
    assert [(line.repository, line.cost_usd) for line in filtered] == [
        ("octo/hello", 5.0),
        ("octo/hello", 0.5),
    ]


async def test_a_version_1_database_gains_the_spend_table_and_keeps_its_jobs(
    tmp_path: Path,
) -> None:
    db = tmp_path / "neo.db"
    with sqlite3.connect(db) as conn:
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT INTO deliveries (id, received_at) VALUES ('d-old', 1.0)")
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    async with SqliteQueue(db) as queue:
        assert (await queue.enqueue("d-old", [])).duplicate
        await queue.record_spend([spent(1, DAY, 1.0)])
        assert await queue.spent_since(DAY, installation_id=7) == 1.0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        # And every later version's, in the same opening: the session a job holds.
        columns = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        assert "session_key" in columns
    conn.close()


def test_a_version_3_database_keeps_one_copy_of_a_record_written_twice(tmp_path: Path) -> None:
    db = tmp_path / "neo.db"
    with sqlite3.connect(db) as conn:
        for statement in _SCHEMA + _MIGRATIONS[2] + _MIGRATIONS[3]:
            conn.execute(statement)
        for cost in (2.0, 2.0, 1.0):
            at = DAY if cost == 2.0 else DAY + 1
            conn.execute(
                "INSERT INTO spend (job_id, repository, installation_id, model, at, cost_usd,"
                " input_tokens, output_tokens) VALUES (1, 'octo/hello', 7, 'claude', ?, ?, 1, 1)",
                (at, cost),
            )
        conn.execute("PRAGMA user_version = 3")
    conn.close()
    queue = SqliteQueue(db)
    queue.close_sync()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT at, cost_usd FROM spend ORDER BY at").fetchall() == [
            (DAY, 2.0),
            (DAY + 1, 1.0),
        ]
    conn.close()
