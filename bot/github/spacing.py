"""Mutating calls of one installation spaced a second apart, GitHub's advice against
secondary rate limits, after a short burst: one `MutationSpacer` per installation,
shared through `Spacers`.

GitHub asks for a second between mutating calls when an integration makes many
of them, and limits content-creating calls to 80 a minute. A job makes a
handful, and two of them come back to back at its end (the pull request, then
the report that links it): spaced strictly, the report waited a second for
nothing (bench/e2e.py --edit). So a few calls may go at once, and past them
one a second: never more than `burst` plus one a second, whatever the load.

What the requester waits for (a job's first progress comment, its pull
request and report) is urgent: it does not queue behind the installation's
other writes (👀, live edits of progress comments), which jobs back to back
on one installation keep coming; its own bucket (`URGENT_BURST` at once,
then one a second) bounds it. Every call counts in the shared bucket, so
the others make room for the urgent ones after them: over any stretch, no
more than `burst` plus `URGENT_BURST` calls start at once, and one a second
after.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from bot.github.caller import Clock, Sleep

__all__ = ["BURST", "DEFAULT_SPACERS", "MUTATING", "URGENT_BURST", "MutationSpacer", "Spacers"]

MUTATING: Final = frozenset({"POST", "PATCH", "PUT", "DELETE"})


# Mutating calls that may start together before the spacing applies.
BURST: Final = 3


# Urgent calls that may start together, whatever else is waiting: a job's
# three (its first comment, then its pull request and report back to back),
# so that on an installation whose jobs come one after another a job's
# first comment does not wait for the room the last one's report took.
URGENT_BURST: Final = 3


class MutationSpacer:
    """Starts of mutating calls of one installation `interval` seconds apart, after
    up to `burst` at once (a token bucket that holds `burst` and refills one an
    `interval`, kept as the time the bucket would be full again).

    Each caller reserves the next free slot and sleeps until it, so concurrent
    callers queue in order without holding a lock across the request. An
    urgent caller reserves in a bucket of its own (`urgent_burst`), ahead of
    the others' reservations, and is charged to the shared one too.
    """

    def __init__(
        self,
        interval: float = 1.0,
        *,
        burst: int = BURST,
        urgent_burst: int = URGENT_BURST,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if burst < 1 or urgent_burst < 1:
            raise ValueError("a burst is at least one call")
        self.interval = interval
        self.burst = burst
        self.urgent_burst = urgent_burst
        self._clock = clock
        self._sleep = sleep
        self._full_at = float("-inf")  # when the bucket holds `burst` again
        self._urgent_full_at = float("-inf")  # when the urgent one holds `urgent_burst`

    async def wait(self, *, urgent: bool = False) -> float:
        """Wait for this call's slot; return how long it waited."""
        now = self._clock()
        if urgent:
            start = max(now, self._urgent_full_at - (self.urgent_burst - 1) * self.interval)
            self._urgent_full_at = max(now, self._urgent_full_at) + self.interval
        else:
            # The bucket is empty while `full_at` is more than `burst` intervals
            # ahead: this call starts when one comes back.
            start = max(now, self._full_at - (self.burst - 1) * self.interval)
        self._full_at = max(now, self._full_at) + self.interval
        delay = start - now
        if delay > 0:
            await self._sleep(delay)
        return delay


class Spacers:
    """One `MutationSpacer` per installation id, shared by all its RepoClients."""

    def __init__(
        self,
        interval: float = 1.0,
        *,
        burst: int = BURST,
        urgent_burst: int = URGENT_BURST,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.interval = interval
        self.burst = burst
        self.urgent_burst = urgent_burst
        self._clock = clock
        self._sleep = sleep
        self._spacers: dict[int, MutationSpacer] = {}

    def for_installation(self, installation_id: int) -> MutationSpacer:
        spacer = self._spacers.get(installation_id)
        if spacer is None:
            spacer = MutationSpacer(
                self.interval,
                burst=self.burst,
                urgent_burst=self.urgent_burst,
                clock=self._clock,
                sleep=self._sleep,
            )
            self._spacers[installation_id] = spacer
        return spacer


# The process's registry, for RepoClients not given one.
DEFAULT_SPACERS: Final = Spacers()
