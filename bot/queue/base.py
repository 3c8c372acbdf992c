"""The queue between intake and workers, as a Protocol.

Its promises (deliveries once, dedupe keys, stops as jobs, one run per
thread, leases) are in docs/architecture.md, "The queue".
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.jobs import Job, JobOutcome, JobRequest, JobState, Lane
from bot.queue.run_log import RunLog
from bot.queue.steering import Steering

DEFAULT_MAX_ATTEMPTS = 3

# A worker stops a job at NEO_JOB_TIMEOUT; it then has this long to report
# before the queue takes the job from it. A running job's `updated_at` is
# when it was claimed (a heartbeat moves its lease only): past
# `updated_at + job_timeout + WIND_DOWN` a queue extends no lease, so even a
# wedged worker loses the job, and `requeue_expired` fails it, not retries it.
WIND_DOWN = 600.0
# No job timeout: a ceiling no clock reaches (SQL compares it as a number).
NO_CEILING = 1e15


def overran(job_timeout: float) -> str:
    """The one line a job stopped by NEO_JOB_TIMEOUT ends with."""
    return f"the job ran longer than NEO_JOB_TIMEOUT ({job_timeout:g} s)"


def lease_ceiling(job_timeout: float | None) -> float:
    """Seconds after its claim past which a job's lease is not extended."""
    return NO_CEILING if job_timeout is None else job_timeout + WIND_DOWN


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """What `enqueue` recorded for one delivery, durably, before it returned."""

    # The delivery id was seen before: nothing was recorded this time.
    duplicate: bool
    # One id per request, in order. A request whose dedupe key was already
    # stored gets the existing job's id, and that id is also in `existing`.
    job_ids: tuple[int, ...] = ()
    existing: tuple[int, ...] = ()

    @property
    def created(self) -> tuple[int, ...]:
        """The jobs this delivery made."""
        return tuple(job_id for job_id in self.job_ids if job_id not in self.existing)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """What a worker learns when it extends its lease."""

    # The job is no longer this worker's (its lease expired and it was
    # requeued or failed, or it was finished): stop, and publish nothing.
    lease_lost: bool
    # Someone asked to stop the job: wind down and finish it as cancelled.
    cancel_requested: bool = False


@dataclass(frozen=True, slots=True)
class CancelApplied:
    """What a cancel request stopped: queued runs cancelled, running ones asked to stop."""

    cancelled: tuple[int, ...] = ()
    cancel_requested: tuple[int, ...] = ()

    def as_result(self) -> dict[str, list[int]]:
        """What was stopped, as the worker logs it."""
        return {"cancelled": list(self.cancelled), "cancel_requested": list(self.cancel_requested)}


@dataclass(frozen=True, slots=True)
class SpendRecord:
    """What one finished job cost, on one model, and when (unix time, UTC).

    The job, the model and the time name the record: the queue stores it once.
    """

    job_id: int
    repository: str  # owner/name
    installation_id: int | None
    model: str
    at: float
    cost_usd: float
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SpendLine:
    """Spend summed over one UTC day (YYYY-MM-DD), repository and model."""

    day: str
    repository: str
    model: str
    jobs: int
    cost_usd: float
    input_tokens: int
    output_tokens: int

    def to_json(self) -> dict[str, object]:
        return {
            "day": self.day,
            "repository": self.repository,
            "model": self.model,
            "jobs": self.jobs,
            "cost_usd": round(self.cost_usd, 6),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The queue at one moment, as /metrics shows it."""

    # Every state is present.
    states: Mapping[JobState, int]
    # Seconds the queued job that has waited longest has waited since it was
    # (last) queued, by the queue's clock; 0 when none is queued.
    oldest_queued_age: float = 0.0

    @property
    def depth(self) -> int:
        """Jobs waiting to be claimed."""
        return self.states.get(JobState.QUEUED, 0)

    @property
    def running(self) -> int:
        return self.states.get(JobState.RUNNING, 0)


def queue_snapshot(rows: Iterable[tuple[str, int, float | None]], now: float) -> QueueSnapshot:
    """Stats from (state, count, oldest updated_at) rows, one per state present."""
    states = dict.fromkeys(JobState, 0)
    oldest = 0.0
    for state, number, since in rows:
        states[JobState(state)] = int(number)
        if state == JobState.QUEUED and since is not None:
            oldest = max(0.0, now - float(since))
    return QueueSnapshot(states=states, oldest_queued_age=oldest)


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """A thread's session as its files hold it: the transcript and its subagents' by number."""

    transcript: bytes
    children: tuple[tuple[int, bytes], ...] = ()


class QueueError(Exception):
    """A queue failure, one line, safe to print."""


class QueueClosed(QueueError):
    """The queue was closed; nothing more can be written to it."""


class LeaseLost(QueueError):
    """`finish` by a worker that no longer holds the job's lease."""


class JobQueue(Steering, RunLog, Protocol):
    """Durable jobs: deliveries in, leased jobs out; the steers for runs (`Steering`)
    and each job's event log (`RunLog`)."""

    async def enqueue(self, delivery_id: str, requests: Sequence[JobRequest]) -> EnqueueResult:
        """Record a delivery and its requests in one transaction.

        Returns only after the transaction is durable: the caller may then
        acknowledge the delivery. An empty `requests` still records the id.
        """
        ...

    async def claim(self, worker: str, lease: float, *, only: Lane | None = None) -> Job | None:
        """Take the oldest claimable queued job (of kind `only`, when given).

        A run is claimable when its thread has no running run; a cancel
        request always is. The job becomes `running` under `worker`, its
        attempts go up by one and its lease lasts `lease` seconds. None when
        nothing is claimable.
        """
        ...

    async def apply_cancel(self, request_id: int) -> CancelApplied:
        """Stop what the cancel request `request_id` asks to stop, and record it.

        The runs of its thread queued before it are cancelled, naming its
        author; a running one gets `cancel_requested`. Runs queued after the
        request are not touched. The request's result is set to what was
        stopped (it stays running until its worker finishes it).
        """
        ...

    async def heartbeat(self, job_id: int, worker: str, lease: float) -> Heartbeat:
        """Extend `worker`'s lease on a running job by `lease` seconds from now.

        A lease that has expired but not yet been handled by
        `requeue_expired` is still the worker's, and is renewed.
        """
        ...

    async def finish(self, job_id: int, worker: str, outcome: JobOutcome) -> None:
        """Record the outcome; the job ends in the state its conclusion goes with.

        Raises LeaseLost if `worker` no longer holds the job.
        """
        ...

    async def release(self, job_id: int, worker: str) -> None:
        """Give a running job back to the queue (graceful shutdown).

        The attempt does not count. Nothing happens if the lease was lost.
        """
        ...

    async def hold_session(self, job_id: int, worker: str, session: str) -> bool:
        """Mark running job `job_id` as the one using session `session`; False while
        another running job uses it (try again later).

        Jobs of different threads can share a session (an issue's and its pull
        request's): this keeps them from running on it at once. The hold ends
        when the job stops running. Raises LeaseLost when `worker` no longer
        holds the job.
        """
        ...

    async def requeue_expired(self) -> builtins.list[int]:
        """Handle running jobs whose lease has expired; return their ids.

        Each goes back to the queue, or fails once it has used its attempts,
        or is cancelled if cancellation had been requested.
        """
        ...

    async def cancel(self, job_id: int, *, by: str | None = None) -> bool:
        """Cancel a queued job, or request cancellation of a running one.

        `by` (a GitHub login) is who asked: the job's result names them
        (`cancelled_by`) at once, so its report can say who stopped it.
        False when the job is unknown or already finished.
        """
        ...

    async def retry(self, job_id: int) -> bool:
        """Put a failed or cancelled job back in the queue with fresh attempts.

        False when the job is unknown or in any other state.
        """
        ...

    async def get(self, job_id: int) -> Job | None: ...

    async def list(
        self,
        *,
        state: JobState | None = None,
        repository: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        """The newest jobs first, optionally of one state and one repository (owner/name)."""
        ...

    async def counts(self) -> dict[JobState, int]:
        """How many jobs are in each state; every state is present."""
        ...

    async def snapshot(self) -> QueueSnapshot:
        """Jobs per state and the oldest queued job's wait, in one query."""
        ...

    async def ping(self) -> None:
        """Raise QueueError unless the database answers a trivial query."""
        ...

    async def last_dedupe_key(self, prefix: str) -> str | None:
        """The greatest dedupe key that starts with `prefix` (not empty), or None.

        How the scheduler finds the last slot it queued for a schedule after a
        restart: those keys end with the slot, written to sort by time.
        """
        ...

    async def record_spend(self, records: Sequence[SpendRecord]) -> None:
        """Store what finished jobs cost, durably, before it returns.

        A record is stored once: one whose job, model and time are stored
        already is not stored again, so a write whose answer was lost can be
        made again.
        """
        ...

    async def spent_since(
        self, since: float, *, repository: str | None = None, installation_id: int | None = None
    ) -> float:
        """US dollars spent from `since` (unix time) on, by one repository or one installation.

        Exactly one of `repository` (owner/name, any case) and `installation_id` is given.
        """
        ...

    async def spend(
        self, since: float, *, repository: str | None = None
    ) -> builtins.list[SpendLine]:
        """Spend from `since` on, per UTC day, repository and model; the newest day first."""
        ...

    async def close(self) -> None:
        """Finish pending writes and release the backend's resources."""
        ...


@runtime_checkable
class SessionArchive(Protocol):
    """A queue that keeps thread sessions for every host (the PostgreSQL one).

    Without it, a session stays in the files of the host that ran the job.
    """

    async def load_session(self, session_id: str) -> SessionFiles | None:
        """The session last saved under `session_id`, or None."""
        ...

    async def save_session(
        self, job_id: int, worker: str, session_id: str, files: SessionFiles
    ) -> bool:
        """Replace the session `session_id` with `files`, while `worker` runs job `job_id`.

        False, and nothing written, when the job is no longer running under
        `worker`: a worker that lost its lease must not overwrite the session
        of the job that took over.
        """
        ...
