"""`snapshot` and `ping`, on every backend: what /healthz and /metrics read."""

from __future__ import annotations

import pytest

from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import JobQueue, QueueError
from tests.bot.queue.conftest import OpenBackend
from tests.bot.queue.factories import FakeClock, enqueue_one


async def test_an_empty_queue(queue: JobQueue) -> None:
    snapshot = await queue.snapshot()
    assert snapshot.states == dict.fromkeys(JobState, 0)
    assert (snapshot.depth, snapshot.running, snapshot.oldest_queued_age) == (0, 0, 0.0)
    await queue.ping()


async def test_states_depth_running_and_the_oldest_wait(queue: JobQueue, clock: FakeClock) -> None:
    first = await enqueue_one(queue, "d1", number=1)
    clock.advance(10)
    await enqueue_one(queue, "d2", number=2)
    clock.advance(5)
    await enqueue_one(queue, "d3", number=3)
    await enqueue_one(queue, "d4", number=4)
    claimed = await queue.claim("w1", 30.0)
    assert claimed is not None
    assert claimed.id == first
    clock.advance(20)
    done = await queue.claim("w1", 30.0)
    assert done is not None
    await queue.finish(done.id, "w1", JobOutcome(conclusion=Conclusion.SUCCESS))

    snapshot = await queue.snapshot()

    assert snapshot.states == {
        **dict.fromkeys(JobState, 0),
        JobState.QUEUED: 2,
        JobState.RUNNING: 1,
        JobState.SUCCEEDED: 1,
    }
    assert (snapshot.depth, snapshot.running) == (2, 1)
    # The two left were queued 5 s after d2, 20 s ago; the claimed ones no longer count.
    assert snapshot.oldest_queued_age == 20.0


async def test_a_requeued_job_waits_from_its_requeue(queue: JobQueue, clock: FakeClock) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", 30.0)
    clock.advance(100)
    assert await queue.requeue_expired() == [job_id]
    clock.advance(7)
    assert (await queue.snapshot()).oldest_queued_age == 7.0


async def test_a_closed_queue_fails_ping_with_one_line(open_backend: OpenBackend) -> None:
    async with open_backend() as queue:
        pass
    with pytest.raises(QueueError) as raised:
        await queue.ping()
    assert len(str(raised.value).splitlines()) == 1
