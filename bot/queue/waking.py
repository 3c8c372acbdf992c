"""A queue that wakes this process's workers when this process queues a job.

`neo serve` runs the intake, the scheduler and the workers over one queue
object; wrapped in a `WakingQueue`, every enqueue that makes a job (and
every retry) sets `queued`, and the workers claim at once instead of at
their next poll. A queue that hears of other processes' jobs itself (the
PostgreSQL queue's LISTEN) lends its own event: then every host's jobs wake
these workers, and `neo worker` processes are woken the same way.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence

from bot.jobs import Job, JobOutcome, JobRequest, JobState, Lane
from bot.queue.base import (
    CancelApplied,
    EnqueueResult,
    Heartbeat,
    JobQueue,
    QueueSnapshot,
    SpendLine,
    SpendRecord,
)
from bot.queue.run_log import RunEvent
from bot.queue.steering import Steer

__all__ = ["WakingQueue", "wakeup_of"]


def wakeup_of(queue: JobQueue) -> asyncio.Event | None:
    """The event `queue` sets whenever any process queues a job, if it has one."""
    event = getattr(queue, "queued", None)
    return event if isinstance(event, asyncio.Event) else None


class WakingQueue:
    """`queue` as it is, plus `queued`: an event set each time a job is queued here."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.queued = wakeup_of(queue) or asyncio.Event()

    async def enqueue(self, delivery_id: str, requests: Sequence[JobRequest]) -> EnqueueResult:
        result = await self.queue.enqueue(delivery_id, requests)
        if result.created:
            self.queued.set()
        return result

    async def retry(self, job_id: int) -> bool:
        retried = await self.queue.retry(job_id)
        if retried:
            self.queued.set()
        return retried

    async def claim(self, worker: str, lease: float, *, only: Lane | None = None) -> Job | None:
        return await self.queue.claim(worker, lease, only=only)

    async def apply_cancel(self, request_id: int) -> CancelApplied:
        return await self.queue.apply_cancel(request_id)

    async def heartbeat(self, job_id: int, worker: str, lease: float) -> Heartbeat:
        return await self.queue.heartbeat(job_id, worker, lease)

    async def finish(self, job_id: int, worker: str, outcome: JobOutcome) -> None:
        await self.queue.finish(job_id, worker, outcome)

    async def release(self, job_id: int, worker: str) -> None:
        await self.queue.release(job_id, worker)

    async def hold_session(self, job_id: int, worker: str, session: str) -> bool:
        return await self.queue.hold_session(job_id, worker, session)

    async def requeue_expired(self) -> builtins.list[int]:
        return await self.queue.requeue_expired()

    async def cancel(self, job_id: int, *, by: str | None = None) -> bool:
        return await self.queue.cancel(job_id, by=by)

    async def get(self, job_id: int) -> Job | None:
        return await self.queue.get(job_id)

    async def list(
        self,
        *,
        state: JobState | None = None,
        repository: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        return await self.queue.list(state=state, repository=repository, limit=limit)

    async def counts(self) -> dict[JobState, int]:
        return await self.queue.counts()

    async def snapshot(self) -> QueueSnapshot:
        return await self.queue.snapshot()

    async def ping(self) -> None:
        await self.queue.ping()

    async def last_dedupe_key(self, prefix: str) -> str | None:
        return await self.queue.last_dedupe_key(prefix)

    async def record_spend(self, records: Sequence[SpendRecord]) -> None:
        await self.queue.record_spend(records)

    async def spent_since(
        self, since: float, *, repository: str | None = None, installation_id: int | None = None
    ) -> float:
        return await self.queue.spent_since(
            since, repository=repository, installation_id=installation_id
        )

    async def spend(
        self, since: float, *, repository: str | None = None
    ) -> builtins.list[SpendLine]:
        return await self.queue.spend(since, repository=repository)

    async def steer(self, job_id: int, author: str, text: str) -> Steer | None:
        return await self.queue.steer(job_id, author, text)

    async def take_steers(self, job_id: int) -> builtins.list[Steer]:
        return await self.queue.take_steers(job_id)

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        return await self.queue.append_events(job_id, events)

    async def events_after(
        self, job_id: int, after: int, *, limit: int = 1000
    ) -> builtins.list[RunEvent]:
        return await self.queue.events_after(job_id, after, limit=limit)

    async def wait_events(self, job_id: int, after: int, timeout: float) -> builtins.list[RunEvent]:
        return await self.queue.wait_events(job_id, after, timeout)

    async def prune_events(self, older_than: float) -> int:
        return await self.queue.prune_events(older_than)

    async def close(self) -> None:
        await self.queue.close()
