"""WakingQueue: the SQLite queue as it is, plus an event for this process's workers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import JobQueue, SqliteQueue, WakingQueue
from tests.bot.queue.factories import make_request


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[WakingQueue]:
    async with SqliteQueue(tmp_path / "queue.db") as inner:
        yield WakingQueue(inner)


async def test_a_new_job_sets_the_event_and_a_duplicate_does_not(queue: WakingQueue) -> None:
    assert not queue.queued.is_set()
    await queue.enqueue("d1", [])
    assert not queue.queued.is_set()  # a delivery that asked for nothing

    created = await queue.enqueue("d2", [make_request("d2")])
    assert queue.queued.is_set()
    queue.queued.clear()

    assert (await queue.enqueue("d2", [make_request("d2")])).duplicate
    again = await queue.enqueue("d3", [make_request("d3", dedupe_key="comment:d2")])
    assert again.created == ()
    assert not queue.queued.is_set()
    assert created.job_ids == again.job_ids


async def test_a_retried_job_sets_the_event(queue: WakingQueue) -> None:
    (job_id,) = (await queue.enqueue("d1", [make_request("d1")])).job_ids
    job = await queue.claim("w", 60)
    assert job is not None
    await queue.finish(job_id, "w", JobOutcome(conclusion=Conclusion.FAILED, error="boom"))
    queue.queued.clear()

    assert await queue.retry(job_id)

    assert queue.queued.is_set()
    assert (await queue.get(job_id)) is not None
    assert (await queue.counts())[JobState.QUEUED] == 1


async def test_everything_else_is_the_inner_queues(queue: WakingQueue) -> None:
    as_protocol: JobQueue = queue
    await as_protocol.enqueue("d1", [make_request("d1", repository="octo/other")])
    job = await as_protocol.claim("w", 60)
    assert job is not None
    assert not (await as_protocol.heartbeat(job.id, "w", 60)).lease_lost
    assert [j.id for j in await as_protocol.list(repository="octo/other")] == [job.id]
    await as_protocol.release(job.id, "w")
    assert await as_protocol.requeue_expired() == []
    assert await as_protocol.cancel(job.id)
    assert await as_protocol.last_dedupe_key("comment:") == "comment:d1"
