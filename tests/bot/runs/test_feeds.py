"""A job's watchers share one reader of its log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from bot.queue import JobQueue, SqliteQueue
from bot.runs import feeds as feeds_module
from bot.runs.feeds import Feeds
from bot.runs.view import Record
from tests.bot.queue.factories import enqueue_one


class Counted:
    """The queue's run logs, counting the reads the feeds make."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.waiting = 0
        self.most_waiting = 0
        self.reads = 0

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> Sequence[Record]:
        self.reads += 1
        return await self.queue.events_after(job_id, after, limit=limit)

    async def wait_events(self, job_id: int, after: int, timeout: float) -> Sequence[Record]:
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        try:
            return await self.queue.wait_events(job_id, after, timeout)
        finally:
            self.waiting -= 1


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[JobQueue]:
    opened = SqliteQueue(tmp_path / "neo.db")
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_hundred_watchers_of_one_job_are_one_reader(queue: JobQueue) -> None:
    job = await enqueue_one(queue, "d1")
    counted = Counted(queue)
    feeds = Feeds(counted)
    watchers = [asyncio.create_task(feeds.wait(job, 0, 10)) for _ in range(100)]
    await asyncio.sleep(0.05)
    assert feeds.readers == 1
    await queue.append_events(job, [(time.time(), "text", {"text": "hello"})])
    seen = await asyncio.gather(*watchers)
    assert {tuple(r.seq for r in records) for records in seen} == {(1,)}
    assert counted.most_waiting == 1
    assert counted.reads == 0
    await feeds.close()


async def test_a_watcher_behind_what_the_feed_keeps_catches_up_from_the_queue(
    queue: JobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feeds_module, "KEPT", 3)
    job = await enqueue_one(queue, "d1")
    feeds = Feeds(Counted(queue))
    ahead = asyncio.create_task(feeds.wait(job, 0, 10))
    await asyncio.sleep(0.05)
    await queue.append_events(job, [(time.time(), "text", {"text": str(n)}) for n in range(6)])
    assert [r.seq for r in await ahead] == [1, 2, 3, 4, 5, 6]  # read again: the feed kept 4-6
    assert [r.seq for r in await feeds.wait(job, 1, 1)] == [2, 3, 4, 5, 6]
    assert [r.seq for r in await feeds.wait(job, 4, 1)] == [5, 6]
    assert await feeds.wait(job, 6, 0.2) == []
    await feeds.close()
