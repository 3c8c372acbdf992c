"""A finished job's outcome and spend, written to the queue however long it is away.

A job's work is published (pushed, its pull request and report on GitHub)
before its outcome reaches the queue. When the queue cannot take the outcome
(PostgreSQL restarting, a network cut), the worker keeps it and what the run
spent and writes them again, with backoff, until the queue answers or
`give_up_after` has passed; the heartbeat keeps the lease alive meanwhile,
and this process sweeps no expired lease (its own job's would be one).

Should the job be taken back all the same (the worker died; another host
swept the lease first), the attempt that claims it finds the report and
writes what it says (`closed_earlier`): the job never runs again. A spend
record is stored once whoever writes it, so it is never counted twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass

from bot.github.client import RepoClient
from bot.jobs import JobOutcome
from bot.queue import JobQueue, LeaseLost, QueueError, SpendRecord
from bot.worker.reported import reported_outcome
from bot.worker.running import Running, log_event

__all__ = ["Backoff", "Settler", "closed_earlier"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Seconds between attempts to write: doubling from `first` up to `most`;
    none after `give_up_after` seconds of trying."""

    first: float = 1.0
    most: float = 15.0
    give_up_after: float = 3600.0

    def delays(self) -> Iterator[float]:
        delay = self.first
        while True:
            yield delay
            delay = min(delay * 2, self.most)


class Settler:
    """Writes the outcomes and spend of one worker's finished jobs to the queue."""

    def __init__(
        self,
        queue: JobQueue,
        worker: str,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        backoff: Backoff | None = None,
    ) -> None:
        self._queue = queue
        self.worker = worker
        self._clock = clock
        self._sleep = sleep
        self._backoff = backoff or Backoff()
        # Jobs from their report on: their work is on GitHub, so a shutdown
        # does not hand them back (`release` would undo their attempt).
        self._publishing: set[int] = set()
        # Jobs whose outcome the queue refused: until they are written, this
        # process sweeps no lease, as it would sweep theirs.
        self._waiting: set[int] = set()

    @property
    def waiting(self) -> bool:
        """Whether an outcome is waiting for the queue to answer."""
        return bool(self._waiting)

    def published(self, job_id: int) -> bool:
        """Whether `job_id`'s work is published and its outcome not yet written."""
        return job_id in self._publishing

    @contextlib.contextmanager
    def publishing(self, job_id: int) -> Iterator[None]:
        """While in the block, `job_id`'s report is going out and its outcome in."""
        self._publishing.add(job_id)
        try:
            yield
        finally:
            self._publishing.discard(job_id)

    async def settle(
        self,
        running: Running,
        outcome: JobOutcome,
        spend: Sequence[SpendRecord] = (),
    ) -> None:
        """Write `spend`, then finish the job with `outcome`; again until the queue answers.

        A job this worker no longer holds is not finished (the one that has
        it will); its spend is written all the same: it was spent.
        """
        job_id = running.job.id
        unwritten = tuple(spend)
        delays = self._backoff.delays()
        started = self._clock()
        tries = 0
        try:
            while True:
                tries += 1
                try:
                    if unwritten:
                        await self._queue.record_spend(unwritten)
                        unwritten = ()
                    await self._queue.finish(job_id, self.worker, outcome)
                except LeaseLost:
                    self._log("finish_lost", job=job_id)
                    return
                except QueueError as error:
                    waited = self._clock() - started
                    if tries == 1:
                        self._waiting.add(job_id)
                        self._log("outcome_unwritten", job=job_id, error=str(error))
                    if waited < self._backoff.give_up_after:
                        await self._sleep(next(delays))
                        continue
                    # The report on GitHub still holds it, for the attempt
                    # that claims the job once the queue is back.
                    self._log(
                        "outcome_abandoned", job=job_id, seconds=round(waited), error=str(error)
                    )
                    return
                if tries > 1:
                    waited = round(self._clock() - started, 1)
                    self._log("outcome_written", job=job_id, tries=tries, seconds=waited)
                return
        finally:
            self._waiting.discard(job_id)

    def _log(self, event: str, **fields: object) -> None:
        log_event(self.worker, event, **fields)


async def closed_earlier(
    settler: Settler, running: Running, github: RepoClient, threads: Sequence[int]
) -> bool:
    """Whether an earlier attempt of the job published its report on one of `threads`.

    If so, what the report says (the outcome, the spend) is written to the
    queue, and this attempt does nothing more: True. A first attempt has no
    earlier one, and reads nothing.
    """
    job = running.job
    if job.attempts <= 1:
        return False
    for number in dict.fromkeys(threads):
        found = await github.job_comment(job.id, number)
        reported = None if found is None else reported_outcome(found[1], job)
        if reported is None:
            continue
        log_event(
            settler.worker,
            "job_already_reported",
            job=job.id,
            attempt=job.attempts,
            reported_by=reported.attempt,
            conclusion=reported.outcome.conclusion.value,
        )
        with settler.publishing(job.id):
            await settler.settle(running, reported.outcome, reported.spend)
        return True
    return False
