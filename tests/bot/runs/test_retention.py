"""Runs' event logs past NEO_RUN_RETENTION_DAYS go (bot/runs/retention.py), on a real queue."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.queue import SqliteQueue
from bot.runs.retention import prune_once, prune_runs

DAY = 86_400.0
NOW = 1_800_000_000.0


async def test_logs_older_than_the_retention_go_and_newer_ones_stay(tmp_path: Path) -> None:
    async with SqliteQueue(tmp_path / "neo.db") as queue:
        await queue.append_events(1, [(NOW - 15 * DAY, "text", {"text": "old"})] * 3)
        await queue.append_events(2, [(NOW - 13 * DAY, "text", {"text": "recent"})])

        assert await prune_once(queue, 14, NOW) == 3

        assert await queue.events_after(1, 0) == []
        assert [e.data for e in await queue.events_after(2, 0)] == [{"text": "recent"}]


async def test_the_service_prunes_at_start_and_then_every_round(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [NOW]
    rounds: list[float] = []

    async def sleep(seconds: float) -> None:
        rounds.append(seconds)
        if len(rounds) == 2:
            raise asyncio.CancelledError
        clock[0] += 2 * DAY  # a day passes between the rounds

    async with SqliteQueue(tmp_path / "neo.db") as queue:
        await queue.append_events(1, [(NOW - 13 * DAY, "text", {"text": "a"})])
        await queue.append_events(2, [(NOW - 20 * DAY, "text", {"text": "b"})])
        with caplog.at_level(logging.INFO, "neo.server"), pytest.raises(asyncio.CancelledError):
            await prune_runs(queue, 14, clock=lambda: clock[0], every=3600.0, sleep=sleep)
        assert rounds == [3600.0, 3600.0]
        # Job 2 went in the first round, job 1 once it too was past 14 days.
        assert await queue.events_after(1, 0) == []
        pruned = [r.getMessage() for r in caplog.records if "run_logs_pruned" in r.getMessage()]
        assert len(pruned) == 2


async def test_a_queue_that_fails_is_one_log_line_and_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    queue = SqliteQueue(tmp_path / "neo.db")
    await queue.close()
    with caplog.at_level(logging.INFO, "neo.server"):
        assert await prune_once(queue, 14, NOW) is None
    assert any("run_logs_prune_failed" in r.getMessage() for r in caplog.records)
