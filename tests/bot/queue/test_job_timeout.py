"""NEO_JOB_TIMEOUT in the queue, on every backend: no lease outlives a job's ceiling.

A worker that keeps beating but never finishes (hung, yet alive) loses its
job once the job has run NEO_JOB_TIMEOUT plus the wind-down since its claim,
and `requeue_expired` fails it with one line instead of retrying it.
"""

from __future__ import annotations

from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import WIND_DOWN, Heartbeat, JobQueue, overran
from tests.bot.queue.conftest import OpenBackend
from tests.bot.queue.factories import FakeClock, enqueue_one

LEASE = 60.0
TIMEOUT = 3600.0
CEILING = TIMEOUT + WIND_DOWN


async def beat_until_refused(queue: JobQueue, clock: FakeClock, job_id: int) -> int:
    """Beat every quarter lease, as a worker does, until the queue says no; the beats."""
    beats = 0
    while (await queue.heartbeat(job_id, "w1", LEASE)).lease_lost is False:
        beats += 1
        clock.advance(LEASE / 4)
    return beats


async def test_a_job_that_beats_for_ever_loses_its_lease_at_the_ceiling(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend(job_timeout=TIMEOUT) as queue:
        job_id = await enqueue_one(queue, "d1")
        claimed = await queue.claim("w1", LEASE)
        assert claimed is not None
        claimed_at = clock.now

        beats = await beat_until_refused(queue, clock, job_id)

        # Every beat before the ceiling was honoured, none after it.
        assert beats == int(CEILING / (LEASE / 4))
        assert clock.now == claimed_at + CEILING
        running = await queue.get(job_id)
        assert running is not None
        # The last lease granted ends at the ceiling, not a full lease later.
        assert running.lease_expires_at == claimed_at + CEILING
        assert running.updated_at == claimed_at

        clock.advance(1)
        assert await queue.requeue_expired() == [job_id]
        failed = await queue.get(job_id)
        assert failed is not None
        assert failed.state == JobState.FAILED
        assert failed.result is not None
        assert failed.result.error == overran(TIMEOUT) + "; its worker did not stop it"
        # Not retried: another attempt would hang as long again.
        assert await queue.claim("w2", LEASE) is None


async def test_a_dead_worker_before_the_ceiling_is_retried_as_before(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend(job_timeout=TIMEOUT) as queue:
        job_id = await enqueue_one(queue, "d1")
        await queue.claim("w1", LEASE)
        clock.advance(LEASE + 1)
        assert await queue.requeue_expired() == [job_id]
        again = await queue.claim("w2", LEASE)
        assert again is not None
        assert (again.id, again.attempts) == (job_id, 2)


async def test_the_ceiling_counts_from_the_latest_claim(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend(job_timeout=TIMEOUT) as queue:
        job_id = await enqueue_one(queue, "d1")
        await queue.claim("w1", LEASE)
        clock.advance(CEILING - 10)
        # The first worker died just before its ceiling; the next claim starts afresh.
        clock.advance(LEASE)
        assert await queue.requeue_expired() == [job_id]
        await queue.claim("w2", LEASE)
        clock.advance(CEILING - LEASE)
        assert await queue.heartbeat(job_id, "w2", LEASE) == Heartbeat(lease_lost=False)
        await queue.finish(job_id, "w2", JobOutcome(conclusion=Conclusion.SUCCESS))
        done = await queue.get(job_id)
        assert done is not None
        assert done.state == JobState.SUCCEEDED


async def test_a_lease_longer_than_the_ceiling_is_cut_to_it(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend(job_timeout=TIMEOUT) as queue:
        await enqueue_one(queue, "d1")
        job = await queue.claim("w1", CEILING * 2)
        assert job is not None
        assert job.lease_expires_at == clock.now + CEILING


async def test_without_a_job_timeout_a_beating_worker_keeps_its_job(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend() as queue:
        job_id = await enqueue_one(queue, "d1")
        await queue.claim("w1", LEASE)
        clock.advance(30 * 24 * 3600.0)
        assert await queue.heartbeat(job_id, "w1", LEASE) == Heartbeat(lease_lost=False)
        assert await queue.requeue_expired() == []
