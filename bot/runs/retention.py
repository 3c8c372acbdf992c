"""Runs' event logs kept for NEO_RUN_RETENTION_DAYS: `neo serve` removes older ones.

Once at start and then every `EVERY` seconds, the logs whose last event is older
than the retention period go, whole (bot/queue/run_log.py). A failure is one log
line and the next round tries again: a log kept too long is no reason to stop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

from bot.queue import QueueError, RunLog
from runner.text import one_line

__all__ = ["EVERY", "prune_once", "prune_runs"]

log = logging.getLogger("neo.server")

EVERY = 3600.0
_DAY = 86_400.0


async def prune_once(events: RunLog, keep_days: int, now: float) -> int | None:
    """Remove the logs older than `keep_days` at `now`; how many events went, None on failure."""
    try:
        removed = await events.prune_events(now - keep_days * _DAY)
    except QueueError as error:
        _log("run_logs_prune_failed", error=one_line(error))
        return None
    if removed:
        _log("run_logs_pruned", events=removed, days=keep_days)
    return removed


async def prune_runs(
    events: RunLog,
    keep_days: int,
    *,
    clock: Callable[[], float],
    every: float = EVERY,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Prune now and every `every` seconds, until cancelled."""
    while True:
        await prune_once(events, keep_days, clock())
        await sleep(every)


def _log(event: str, **fields: object) -> None:
    log.info(json.dumps({"event": event, **fields}, default=str))
