"""The `Steering` contract, on every backend: SQLite and PostgreSQL.

A steer is kept for a queued or running run only, and delivered once,
oldest first, whoever takes it.
"""

from __future__ import annotations

import asyncio

import pytest

from bot.jobs import Conclusion, JobKind, JobOutcome, JobState
from bot.queue import MAX_STEER_CHARS, JobQueue, Steer, WakingQueue
from tests.bot.queue.conftest import OpenBackend
from tests.bot.queue.factories import FakeClock, enqueue_one, make_request

LEASE = 30.0


async def test_a_steer_for_a_queued_run_is_taken_once_oldest_first(
    queue: JobQueue, clock: FakeClock
) -> None:
    job_id = await enqueue_one(queue, "d1")
    first = await queue.steer(job_id, "alice", "use the ISO format")
    clock.advance(1)
    second = await queue.steer(job_id, "bob", "and keep the old test")
    assert first is not None
    assert second is not None
    assert first == Steer(first.id, job_id, "alice", "use the ISO format", clock.now - 1)
    assert second.id > first.id

    assert await queue.take_steers(job_id) == [first, second]
    assert await queue.take_steers(job_id) == []


async def test_a_running_run_takes_its_own_steers_only(queue: JobQueue) -> None:
    mine = await enqueue_one(queue, "d1", number=1)
    other = await enqueue_one(queue, "d2", number=2)
    assert await queue.claim("w1", LEASE) is not None
    kept = await queue.steer(mine, "alice", "stop touching the docs")
    elsewhere = await queue.steer(other, "alice", "for the other thread")

    assert await queue.take_steers(mine) == [kept]
    assert await queue.take_steers(other) == [elsewhere]


async def test_no_steer_for_a_finished_unknown_or_stop_job(queue: JobQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await queue.claim("w1", LEASE) is not None
    await queue.finish(job_id, "w1", JobOutcome(conclusion=Conclusion.SUCCESS))
    assert await queue.steer(job_id, "alice", "too late") is None
    assert await queue.steer(job_id + 1000, "alice", "nobody") is None

    stop = make_request("d2", kind=JobKind.STOP, instruction="@neo stop")
    (stop_id,) = (await queue.enqueue("d2", [stop])).job_ids
    assert await queue.steer(stop_id, "alice", "not a run") is None
    assert await queue.take_steers(job_id) == []


async def test_a_cancelled_run_takes_no_steer(queue: JobQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await queue.cancel(job_id)
    assert await queue.steer(job_id, "alice", "after the stop") is None


async def test_empty_or_oversized_text_is_refused_with_one_line(queue: JobQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    with pytest.raises(ValueError, match=r"^a steer needs some text$"):
        await queue.steer(job_id, "alice", "  \n")
    with pytest.raises(ValueError, match=f"at most {MAX_STEER_CHARS:,} characters"):
        await queue.steer(job_id, "alice", "x" * (MAX_STEER_CHARS + 1))
    assert await queue.take_steers(job_id) == []


async def test_two_takers_at_once_never_both_get_a_steer(open_backend: OpenBackend) -> None:
    # Two queue objects on one database: two workers' processes, as far as
    # the database can tell.
    async with open_backend() as one, open_backend() as two:
        job_id = await enqueue_one(one, "d1")
        kept = [await one.steer(job_id, "alice", f"steer {n}") for n in range(20)]
        taken: list[Steer] = []
        for _ in range(10):
            a, b = await asyncio.gather(one.take_steers(job_id), two.take_steers(job_id))
            taken += a + b
        assert sorted(taken, key=lambda s: s.id) == kept
        assert len({steer.id for steer in taken}) == len(kept)


async def test_steers_survive_a_reopening(open_backend: OpenBackend) -> None:
    async with open_backend() as first:
        job_id = await enqueue_one(first, "d1")
        kept = await first.steer(job_id, "alice", "durable")
    async with open_backend() as second:
        assert await second.take_steers(job_id) == [kept]


async def test_the_waking_queue_passes_steering_through(queue: JobQueue) -> None:
    waking = WakingQueue(queue)
    job_id = await enqueue_one(waking, "d1")
    kept = await waking.steer(job_id, "alice", "through the wrapper")
    assert await waking.take_steers(job_id) == [kept]


async def test_a_cancel_by_someone_names_them_queued_or_running(queue: JobQueue) -> None:
    queued = await enqueue_one(queue, "d1", number=1)
    running = await enqueue_one(queue, "d2", number=2)
    claimed = await queue.claim("w1", LEASE)
    assert claimed is not None
    assert claimed.id == queued  # the oldest first
    assert await queue.cancel(running, by="carol")
    assert await queue.cancel(queued, by="dave")

    waiting = await queue.get(running)
    assert waiting is not None
    assert waiting.result is not None
    assert (waiting.state, waiting.result.cancelled_by) == (JobState.CANCELLED, "carol")
    assert waiting.result.error == "cancelled: @carol asked to stop before it ran"
    going = await queue.get(queued)
    assert going is not None
    assert going.result is not None
    assert (going.state, going.cancel_requested) == (JobState.RUNNING, True)
    assert going.result.cancelled_by == "dave"
    # Its worker's outcome replaces the note when it ends.
    await queue.finish(
        queued, "w1", JobOutcome(conclusion=Conclusion.CANCELLED, cancelled_by="dave")
    )
    ended = await queue.get(queued)
    assert ended is not None
    assert ended.state is JobState.CANCELLED
