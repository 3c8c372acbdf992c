"""What the worker and a job it runs share: the control signals, and the waits both use.

The worker's heartbeat, deadline and shutdown set `Running`'s signals; the job
reads them (`Running.check_alive`) and answers `stop`. Nothing the job
produces is written here: a job returns what it made.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from bot.jobs import Job
from bot.runs.writer import EventWriter

__all__ = ["Running", "Stopped", "first", "log_event", "together"]

log = logging.getLogger("neo.worker")

_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")


class Stopped(Exception):
    """The job's lease was lost or the worker is shutting down: publish nothing more."""


@dataclass
class Running:
    """The signals between the worker and one job it runs."""

    job: Job
    # The runner's stop: set by a cancel, a lost lease or the end of the grace period.
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lease_lost: bool = False
    # False from a failed answer of the queue until this job's next heartbeat
    # goes through: its lease may have run out meanwhile, and is still its own.
    renewed: bool = True
    cancel_requested: bool = False
    shutting_down: bool = False
    # The NEO_JOB_TIMEOUT (seconds) the job ran past, once it has.
    timed_out: float | None = None
    # The job's event log, while the worker writes it (a run's, not a stop's).
    events: EventWriter | None = None

    def check_alive(self, worker: str) -> None:
        """Raise Stopped once the job may publish nothing more."""
        if self.lease_lost:
            log_event(worker, "abandoned", job=self.job.id, reason="lease lost")
            raise Stopped
        if self.shutting_down:
            raise Stopped


def log_event(worker: str, event: str, **fields: Any) -> None:
    """One JSON log line; `ts` is the unix time."""
    line = {"event": event, "ts": round(time.time(), 3), "worker": worker, **fields}
    log.info(json.dumps(line, default=str))


async def first(*waits: Awaitable[Any]) -> None:
    """Wait until the first of `waits` is done; cancel the others."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def together(
    one: Awaitable[_A], two: Awaitable[_B], three: Awaitable[_C]
) -> tuple[_A, _B, _C]:
    """Await the three at once; the first failure is raised once all have ended."""
    results = await asyncio.gather(one, two, three, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast("tuple[_A, _B, _C]", tuple(results))
