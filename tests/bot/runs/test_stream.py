"""The SSE stream over the queue's own run log: where it starts, and that it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.jobs import Conclusion, JobOutcome
from bot.queue import JobQueue, SqliteQueue
from bot.runs.feeds import Feeds
from bot.runs.stream import stream
from tests.bot.queue.factories import enqueue_one
from tests.bot.runs.test_feeds import Counted


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[JobQueue]:
    opened = SqliteQueue(tmp_path / "neo.db")
    try:
        yield opened
    finally:
        await opened.close()


async def _read(body: AsyncIterator[bytes]) -> list[bytes]:
    """The stream's messages, each with its blank line."""
    sent = b"".join([chunk async for chunk in body])
    return [message + b"\n\n" for message in sent.split(b"\n\n") if message]


async def test_the_stream_resumes_after_the_id_given_and_ends_after_the_finished_record(
    queue: JobQueue,
) -> None:
    job = await enqueue_one(queue, "d1")
    assert await queue.claim("w", 60) is not None
    now = time.time()
    await queue.append_events(job, [(now, "text", {"text": str(n)}) for n in range(1, 6)])
    feeds = Feeds(queue)
    # A keepalive far longer than the test: only the finished record can end it in time.
    body = stream(queue, feeds, queue, job, 3, asyncio.Event(), keepalive=600)
    reading = asyncio.create_task(_read(body))
    await asyncio.sleep(0.2)
    await queue.append_events(job, [(now, "state", {"state": "finished", "conclusion": "success"})])
    chunks = await asyncio.wait_for(reading, 10)
    ids = [int(c.split(b"\n", 1)[0].removeprefix(b"id: ")) for c in chunks if c.startswith(b"id: ")]
    assert ids == [4, 5, 6]
    assert chunks[-1] == b"event: end\ndata: {}\n\n"
    await queue.finish(job, "w", JobOutcome(conclusion=Conclusion.SUCCESS))
    await feeds.close()


async def test_a_server_closing_ends_every_stream_at_once(queue: JobQueue) -> None:
    job = await enqueue_one(queue, "d1")
    assert await queue.claim("w", 60) is not None
    closing = asyncio.Event()
    feeds = Feeds(queue)
    reading = asyncio.create_task(
        _read(stream(queue, feeds, queue, job, 0, closing, keepalive=600))
    )
    await asyncio.sleep(0.2)
    closing.set()
    chunks = await asyncio.wait_for(reading, 5)
    assert chunks == [b"retry: 2000\n\n"]
    await feeds.close()


async def test_a_caught_up_stream_waits_on_its_feed_not_the_queue(queue: JobQueue) -> None:
    job = await enqueue_one(queue, "d1")
    assert await queue.claim("w", 60) is not None
    counted = Counted(queue)
    feeds = Feeds(counted)
    reading = asyncio.create_task(
        _read(stream(counted, feeds, queue, job, 0, asyncio.Event(), keepalive=600))
    )
    for n in range(10):
        await queue.append_events(job, [(time.time(), "text", {"text": str(n)})])
        await asyncio.sleep(0.05)
    await queue.append_events(job, [(time.time(), "state", {"state": "finished"})])
    chunks = await asyncio.wait_for(reading, 10)
    assert len([c for c in chunks if c.startswith(b"id: ")]) == 11
    # Once to catch up, once after the finished record: never once a record.
    assert counted.reads == 2
    await feeds.close()
