"""The `JobQueue` contract, on every backend: SQLite and PostgreSQL.

Each test runs once per backend, on a fresh database; what only one backend
has (SQLite's WAL and group commit, PostgreSQL's migrations) is tested in
that backend's own file.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from bot.jobs import Conclusion, JobKind, JobOutcome, JobState
from bot.queue import (
    CancelApplied,
    EnqueueResult,
    Heartbeat,
    JobQueue,
    LeaseLost,
    QueueClosed,
    QueueError,
)
from tests.bot.queue.conftest import OpenBackend
from tests.bot.queue.factories import FakeClock, enqueue_one, make_request

ROOT = Path(__file__).resolve().parents[3]
LEASE = 30.0


async def test_enqueue_claim_finish(queue: JobQueue, clock: FakeClock) -> None:
    request = make_request("d1")
    result = await queue.enqueue("d1", [request])
    assert result == EnqueueResult(duplicate=False, job_ids=result.job_ids)
    assert result.created == result.job_ids

    job = await queue.claim("w1", LEASE)
    assert job is not None
    assert job.id == result.job_ids[0]
    assert job.request == request
    assert (job.state, job.attempts, job.worker) == (JobState.RUNNING, 1, "w1")
    assert job.lease_expires_at == clock.now + LEASE
    assert await queue.claim("w2", LEASE) is None

    clock.advance(5)
    fixed = JobOutcome(conclusion=Conclusion.SUCCESS, pr_url="https://github.test/pull/7")
    await queue.finish(job.id, "w1", fixed)
    done = await queue.get(job.id)
    assert done is not None
    assert done.state == JobState.SUCCEEDED
    assert done.result == fixed
    assert (done.worker, done.lease_expires_at) == (None, None)
    assert done.updated_at == clock.now
    assert done.created_at == clock.now - 5


async def test_finish_by_another_worker_is_refused(queue: JobQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", LEASE)
    with pytest.raises(LeaseLost):
        await queue.finish(job_id, "w2", JobOutcome(conclusion=Conclusion.SUCCESS))
    job = await queue.get(job_id)
    assert job is not None
    assert job.state == JobState.RUNNING


async def test_a_delivery_without_requests_is_still_recorded(queue: JobQueue) -> None:
    assert await queue.enqueue("d1", []) == EnqueueResult(duplicate=False)
    assert await queue.enqueue("d1", []) == EnqueueResult(duplicate=True)


async def test_duplicate_delivery_queues_nothing(queue: JobQueue) -> None:
    first = await queue.enqueue("d1", [make_request("d1")])
    again = await queue.enqueue("d1", [make_request("d1", dedupe_key="another comment")])
    assert again == EnqueueResult(duplicate=True, job_ids=())
    assert [job.id for job in await queue.list()] == list(first.job_ids)


async def test_same_dedupe_key_in_another_delivery_makes_no_second_job(
    queue: JobQueue,
) -> None:
    first = await queue.enqueue("d1", [make_request("d1", dedupe_key="comment:99")])
    second = await queue.enqueue(
        "d2",
        [make_request("d2", dedupe_key="comment:99"), make_request("d2", dedupe_key="comment:100")],
    )
    assert not second.duplicate
    assert second.job_ids[0] == first.job_ids[0]
    assert second.existing == (first.job_ids[0],)
    assert second.created == (second.job_ids[1],)
    assert len(await queue.list()) == 2


async def test_one_thread_runs_one_job_at_a_time_in_order(queue: JobQueue) -> None:
    first = await enqueue_one(queue, "d1", number=1)
    second = await enqueue_one(queue, "d2", number=1)
    other = await enqueue_one(queue, "d3", number=2)

    claimed = await queue.claim("w1", LEASE)
    assert claimed is not None
    assert claimed.id == first
    # The thread is busy: its second job waits, another thread's does not.
    claimed = await queue.claim("w2", LEASE)
    assert claimed is not None
    assert claimed.id == other
    assert await queue.claim("w3", LEASE) is None

    await queue.finish(first, "w1", JobOutcome(conclusion=Conclusion.SUCCESS))
    claimed = await queue.claim("w3", LEASE)
    assert claimed is not None
    assert claimed.id == second


async def test_two_threads_jobs_never_hold_one_session_at_once(
    queue: JobQueue, clock: FakeClock
) -> None:
    session = "octo/hello#1"
    issue = await enqueue_one(queue, "d1", number=1)
    pull = await enqueue_one(queue, "d2", number=2)
    assert (await queue.claim("w1", LEASE), await queue.claim("w2", LEASE)) != (None, None)

    assert await queue.hold_session(issue, "w1", session) is True
    assert await queue.hold_session(issue, "w1", session) is True  # its own: still held
    assert await queue.hold_session(pull, "w2", session) is False
    assert await queue.hold_session(pull, "w2", "octo/hello#2") is True  # another session
    with pytest.raises(LeaseLost):
        await queue.hold_session(issue, "w2", "octo/hello#9")

    # Ending the run ends the hold: the other thread's job may take the session.
    await queue.finish(issue, "w1", JobOutcome(conclusion=Conclusion.SUCCESS))
    assert await queue.hold_session(pull, "w2", session) is True


async def test_a_hold_ends_with_the_lease_and_a_new_claim_starts_without_one(
    queue: JobQueue, clock: FakeClock
) -> None:
    session = "octo/hello#1"
    first = await enqueue_one(queue, "d1", number=1)
    other = await enqueue_one(queue, "d2", number=2)
    await queue.claim("w1", LEASE)
    assert await queue.hold_session(first, "w1", session) is True
    clock.advance(LEASE + 1)
    assert await queue.requeue_expired() == [first]

    # The dead worker's hold went with its lease; its job comes back holding nothing.
    again = await queue.claim("w2", LEASE)
    assert again is not None
    assert again.id == first
    claimed = await queue.claim("w3", LEASE)
    assert claimed is not None
    assert claimed.id == other
    assert await queue.hold_session(other, "w3", session) is True
    assert await queue.hold_session(first, "w2", session) is False


async def test_thread_key_ignores_repository_case(queue: JobQueue) -> None:
    await enqueue_one(queue, "d1", repository="Octo/Hello")
    await enqueue_one(queue, "d2", repository="octo/hello")
    assert await queue.claim("w1", LEASE) is not None
    assert await queue.claim("w2", LEASE) is None


async def test_expired_lease_returns_the_job_to_the_queue(
    queue: JobQueue, clock: FakeClock
) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", LEASE)
    clock.advance(LEASE - 1)
    assert await queue.requeue_expired() == []
    clock.advance(2)
    assert await queue.requeue_expired() == [job_id]

    job = await queue.get(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.worker, job.lease_expires_at) == (
        JobState.QUEUED,
        1,
        None,
        None,
    )
    # The old worker learns it lost the job; a new one gets it.
    assert await queue.heartbeat(job_id, "w1", LEASE) == Heartbeat(lease_lost=True)
    again = await queue.claim("w2", LEASE)
    assert again is not None
    assert (again.id, again.attempts) == (job_id, 2)


async def test_past_max_attempts_the_job_fails(open_backend: OpenBackend, clock: FakeClock) -> None:
    async with open_backend(max_attempts=2) as queue:
        job_id = await enqueue_one(queue, "d1")
        for _ in range(2):
            assert await queue.claim("w1", LEASE) is not None
            clock.advance(LEASE + 1)
            assert await queue.requeue_expired() == [job_id]
        job = await queue.get(job_id)
        assert job is not None
        assert (job.state, job.attempts) == (JobState.FAILED, 2)
        assert job.result == JobOutcome(
            conclusion=Conclusion.FAILED,
            error="gave up after 2 attempts: each time the worker's lease expired"
            " before it finished",
        )
        assert await queue.claim("w1", LEASE) is None


async def test_heartbeat_extends_the_lease_and_reports_cancellation(
    queue: JobQueue, clock: FakeClock
) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", LEASE)
    clock.advance(LEASE - 1)
    assert await queue.heartbeat(job_id, "w1", LEASE) == Heartbeat(lease_lost=False)
    clock.advance(LEASE - 1)
    assert await queue.requeue_expired() == []

    assert await queue.heartbeat(job_id, "w2", LEASE) == Heartbeat(lease_lost=True)
    assert await queue.cancel(job_id)
    assert await queue.heartbeat(job_id, "w1", LEASE) == Heartbeat(
        lease_lost=False, cancel_requested=True
    )
    await queue.finish(job_id, "w1", JobOutcome(conclusion=Conclusion.CANCELLED))
    assert await queue.heartbeat(job_id, "w1", LEASE) == Heartbeat(lease_lost=True)


async def test_a_cancel_request_waits_for_its_worker_and_stops_its_thread_only(
    queue: JobQueue,
) -> None:
    running = await enqueue_one(queue, "d1", number=1)
    await queue.claim("w1", LEASE)
    waiting = await enqueue_one(queue, "d2", number=1)
    elsewhere = await enqueue_one(queue, "d3", number=2)

    stop = make_request("d4", number=1, kind=JobKind.STOP, author="bob", instruction="@neo stop")
    (request_id,) = (await queue.enqueue("d4", [stop])).job_ids
    # Queued, not applied: whether bob may stop anything is the worker's check.
    recorded = await queue.get(request_id)
    assert recorded is not None
    assert (recorded.state, recorded.result) == (JobState.QUEUED, None)
    assert (await queue.get(waiting)).state == JobState.QUEUED  # type: ignore[union-attr]
    later = await enqueue_one(queue, "d6", number=1)

    # Claimable although its thread has a run going on; older work comes first.
    first = await queue.claim("w2", LEASE)
    assert first is not None
    assert first.id == elsewhere
    claimed = await queue.claim("w2", LEASE)
    assert claimed is not None
    assert (claimed.id, claimed.request.kind) == (request_id, JobKind.STOP)

    applied = await queue.apply_cancel(request_id)
    assert applied == CancelApplied(cancelled=(waiting,), cancel_requested=(running,))
    recorded = await queue.get(request_id)
    assert recorded is not None
    assert recorded.result == JobOutcome(
        conclusion=Conclusion.STOPPED, cancelled=(waiting,), cancel_requested=(running,)
    )
    cancelled = await queue.get(waiting)
    assert cancelled is not None
    assert cancelled.state == JobState.CANCELLED
    assert cancelled.result == JobOutcome(
        conclusion=Conclusion.CANCELLED,
        error=f"cancelled: @bob asked to stop (job {request_id})",
    )
    still_running = await queue.get(running)
    assert still_running is not None
    assert (still_running.state, still_running.cancel_requested) == (JobState.RUNNING, True)
    # A request made after the stop is not what the stop was about.
    after = await queue.get(later)
    assert after is not None
    assert (after.state, after.cancel_requested) == (JobState.QUEUED, False)
    untouched = await queue.get(elsewhere)
    assert untouched is not None
    assert (untouched.state, untouched.cancel_requested) == (JobState.RUNNING, False)

    # Redelivered under another delivery id, the same comment stops nothing twice.
    again = await queue.enqueue(
        "d5", [make_request("d5", kind=JobKind.STOP, dedupe_key=stop.dedupe_key)]
    )
    assert again.existing == (request_id,)


async def test_claim_only_cancel_requests_skips_runs(queue: JobQueue) -> None:
    await enqueue_one(queue, "d1", number=1)
    stop = make_request("d2", number=2, kind=JobKind.STOP, instruction="@neo stop")
    (request_id,) = (await queue.enqueue("d2", [stop])).job_ids

    claimed = await queue.claim("w1", LEASE, only="cancel")
    assert claimed is not None
    assert claimed.id == request_id
    assert await queue.claim("w1", LEASE, only="cancel") is None


async def test_a_running_cancel_request_does_not_hold_up_its_threads_runs(
    queue: JobQueue,
) -> None:
    stop = make_request("d1", number=1, kind=JobKind.STOP, instruction="@neo stop")
    (request_id,) = (await queue.enqueue("d1", [stop])).job_ids
    run = await enqueue_one(queue, "d2", number=1)
    assert (await queue.claim("w1", LEASE)).id == request_id  # type: ignore[union-attr]
    assert (await queue.claim("w1", LEASE)).id == run  # type: ignore[union-attr]


async def test_apply_cancel_refuses_a_run(queue: JobQueue) -> None:
    run = await enqueue_one(queue, "d1", number=1)
    with pytest.raises(QueueError, match="not a cancel request"):
        await queue.apply_cancel(run)


async def test_an_expired_job_whose_cancel_was_requested_is_cancelled(
    queue: JobQueue, clock: FakeClock
) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", LEASE)
    assert await queue.cancel(job_id)
    clock.advance(LEASE + 1)
    assert await queue.requeue_expired() == [job_id]
    job = await queue.get(job_id)
    assert job is not None
    assert job.state == JobState.CANCELLED


async def test_cancel(queue: JobQueue) -> None:
    queued = await enqueue_one(queue, "d1", number=1)
    assert await queue.cancel(queued)
    job = await queue.get(queued)
    assert job is not None
    assert job.state == JobState.CANCELLED
    assert not await queue.cancel(queued)
    assert not await queue.cancel(12345)


async def test_retry_puts_failed_and_cancelled_jobs_back(queue: JobQueue) -> None:
    failed = await enqueue_one(queue, "d1", number=1)
    cancelled = await enqueue_one(queue, "d2", number=2)
    succeeded = await enqueue_one(queue, "d3", number=3)
    for _ in range(3):
        job = await queue.claim("w1", LEASE)
        assert job is not None
        outcome = {failed: Conclusion.FAILED, succeeded: Conclusion.SUCCESS}
        if job.id in outcome:
            await queue.finish(job.id, "w1", JobOutcome(conclusion=outcome[job.id], error="boom"))
        else:
            assert await queue.cancel(job.id)
            await queue.finish(job.id, "w1", JobOutcome(conclusion=Conclusion.CANCELLED))

    assert await queue.retry(failed)
    assert await queue.retry(cancelled)
    assert not await queue.retry(succeeded)
    assert not await queue.retry(failed)  # already queued
    assert not await queue.retry(999)
    job = await queue.get(failed)
    assert job is not None
    assert (job.state, job.attempts, job.result, job.cancel_requested) == (
        JobState.QUEUED,
        0,
        None,
        False,
    )
    job = await queue.get(cancelled)
    assert job is not None
    assert (job.state, job.cancel_requested) == (JobState.QUEUED, False)


async def test_release_gives_the_job_back_without_spending_an_attempt(
    queue: JobQueue,
) -> None:
    job_id = await enqueue_one(queue, "d1")
    await queue.claim("w1", LEASE)
    await queue.release(job_id, "w2")  # not w2's: nothing happens
    await queue.release(job_id, "w1")
    job = await queue.get(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.worker) == (JobState.QUEUED, 0, None)


async def test_list_filters_and_counts(queue: JobQueue) -> None:
    first = await enqueue_one(queue, "d1", repository="octo/hello")
    second = await enqueue_one(queue, "d2", repository="Octo/World")
    third = await enqueue_one(queue, "d3", repository="octo/world", number=2)
    # A name that starts like another is another repository.
    fourth = await enqueue_one(queue, "d4", repository="octo/world-2")
    await queue.claim("w1", LEASE)

    assert [job.id for job in await queue.list()] == [fourth, third, second, first]
    assert [job.id for job in await queue.list(limit=2)] == [fourth, third]
    assert [job.id for job in await queue.list(repository="octo/world")] == [third, second]
    assert [job.id for job in await queue.list(repository="Octo/World", limit=1)] == [third]
    assert [job.id for job in await queue.list(state=JobState.RUNNING)] == [first]
    assert await queue.list(state=JobState.QUEUED, repository="octo/hello") == []
    assert await queue.list(repository="octo") == []
    assert await queue.counts() == {
        JobState.QUEUED: 3,
        JobState.RUNNING: 1,
        JobState.SUCCEEDED: 0,
        JobState.FAILED: 0,
        JobState.CANCELLED: 0,
    }


async def test_concurrent_enqueues_with_duplicates_record_each_delivery_once(
    queue: JobQueue,
) -> None:
    # 300 distinct deliveries; 60 of them sent twice at the same moment, and
    # 40 that share a dedupe key with another delivery.
    ids = [f"delivery-{n}" for n in range(300)]
    sent = ids + ids[:60]
    random.Random(4).shuffle(sent)

    def key(delivery_id: str) -> str:
        n = int(delivery_id.split("-")[1])
        return f"comment:{n % 260}"

    results = await asyncio.gather(
        *(queue.enqueue(d, [make_request(d, dedupe_key=key(d))]) for d in sent)
    )
    outcomes: dict[str, list[EnqueueResult]] = {}
    for delivery_id, result in zip(sent, results, strict=True):
        outcomes.setdefault(delivery_id, []).append(result)
    for delivery_id, seen in outcomes.items():
        flags = sorted(result.duplicate for result in seen)
        assert flags == [False] + [True] * (len(seen) - 1), delivery_id
    created = [job_id for result in results for job_id in result.created]
    assert len(created) == len(set(created)) == 260
    stored = await queue.list(limit=1000)
    assert sorted(job.id for job in stored) == sorted(created)


async def test_concurrent_claims_take_each_job_once_and_a_thread_once(queue: JobQueue) -> None:
    for n in range(40):
        await queue.enqueue(f"d{n}", [make_request(f"d{n}", number=n % 10)])
    claims = await asyncio.gather(*(queue.claim(f"w{n}", LEASE) for n in range(30)))
    taken = [job for job in claims if job is not None]
    # Ten threads: ten runs at most, each the oldest of its thread.
    assert sorted(job.request.thread.number for job in taken) == list(range(10))
    assert all(int(job.request.delivery_id[1:]) < 10 for job in taken)
    assert len({job.id for job in taken}) == len(taken)


async def test_reopening_keeps_everything(open_backend: OpenBackend, clock: FakeClock) -> None:
    async with open_backend() as queue:
        job_id = await enqueue_one(queue, "d1")
        await enqueue_one(queue, "d2", number=2)
        await queue.claim("w1", LEASE)
        before = await queue.list()
    async with open_backend() as queue:
        assert await queue.list() == before
        assert (await queue.enqueue("d1", [])).duplicate
        clock.advance(LEASE + 1)
        assert await queue.requeue_expired() == [job_id]


async def test_last_dedupe_key_is_the_greatest_with_the_prefix(queue: JobQueue) -> None:
    for slot in ("2025-03-14T06:00", "2025-03-15T06:00", "2025-03-13T06:00"):
        await queue.enqueue(slot, [make_request(slot, dedupe_key=f"schedule:nightly:{slot}")])
    await queue.enqueue("x", [make_request("x", dedupe_key="schedule:nightly2:2099")])
    assert await queue.last_dedupe_key("schedule:nightly:") == "schedule:nightly:2025-03-15T06:00"
    assert await queue.last_dedupe_key("schedule:weekly:") is None
    with pytest.raises(ValueError, match="must not be empty"):
        await queue.last_dedupe_key("")


async def test_closed_queue_refuses_writes(open_backend: OpenBackend) -> None:
    async with open_backend() as queue:
        pass
    with pytest.raises(QueueClosed):
        await queue.enqueue("d1", [])


async def test_one_delivery_naming_a_key_twice_and_an_old_key_makes_one_job(
    queue: JobQueue,
) -> None:
    (old,) = (await queue.enqueue("d1", [make_request("d1", dedupe_key="old")])).job_ids
    result = await queue.enqueue(
        "d2",
        [
            make_request("d2", dedupe_key="new"),
            make_request("d2", dedupe_key="new"),
            make_request("d2", dedupe_key="old"),
        ],
    )
    new = result.job_ids[0]
    assert result.job_ids == (new, new, old)
    assert result.existing == (new, old)
    assert len(await queue.list()) == 2


def test_kill_9_loses_no_acknowledged_delivery(open_backend: OpenBackend) -> None:
    """A producer is SIGKILLed at random moments; every id it printed is queued once."""
    rng = random.Random()
    acknowledged: list[str] = []
    for round_ in range(4):
        producer = subprocess.Popen(
            [sys.executable, "-m", "tests.bot.queue.enqueuer", open_backend.where, f"r{round_}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        # A stuck producer must not hang the suite.
        watchdog = threading.Timer(60, producer.kill)
        watchdog.start()
        try:
            assert producer.stdout is not None
            # Kills fall between commits wherever the count lands: more adds length, not cases.
            wanted = rng.randrange(50, 500)
            for _ in range(wanted):
                line = producer.stdout.readline()
                assert line.endswith(b"\n"), "the producer stopped early"
                acknowledged.append(line.decode().strip())
            os.kill(producer.pid, signal.SIGKILL)
            # Whatever it printed before dying was acknowledged too.
            rest = producer.stdout.read()
        finally:
            watchdog.cancel()
            producer.wait()
        assert producer.returncode == -signal.SIGKILL
        # The last piece is a line cut short by the kill (or empty).
        acknowledged.extend(line.decode() for line in rest.split(b"\n")[:-1])

    async def stored() -> Counter[str]:
        async with open_backend() as queue:
            jobs = await queue.list(limit=1_000_000)
            for delivery_id in acknowledged[:: max(1, len(acknowledged) // 50)]:
                assert (await queue.enqueue(delivery_id, [])).duplicate
        return Counter(job.request.delivery_id for job in jobs)

    counts = asyncio.run(stored())
    assert len(acknowledged) == len(set(acknowledged)) >= 200
    missing = [d for d in acknowledged if counts[d] != 1]
    assert missing == []
