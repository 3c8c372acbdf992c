"""Mutating calls of one installation spaced a second apart, GitHub's advice against
secondary rate limits: one `MutationSpacer` per installation, shared through `Spacers`."""

from __future__ import annotations

import asyncio
import time
from typing import Final

from bot.github.caller import Clock, Sleep

__all__ = ["DEFAULT_SPACERS", "MUTATING", "MutationSpacer", "Spacers"]

MUTATING: Final = frozenset({"POST", "PATCH", "PUT", "DELETE"})


class MutationSpacer:
    """Starts of mutating calls of one installation at least `interval` seconds apart.

    Each caller reserves the next free slot and sleeps until it, so concurrent
    callers queue in order without holding a lock across the request.
    """

    def __init__(
        self, interval: float = 1.0, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")

    async def wait(self) -> float:
        """Wait for this call's slot; return how long it waited."""
        now = self._clock()
        start = max(now, self._next)
        self._next = start + self.interval
        delay = start - now
        if delay > 0:
            await self._sleep(delay)
        return delay


class Spacers:
    """One `MutationSpacer` per installation id, shared by all its RepoClients."""

    def __init__(
        self, interval: float = 1.0, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._spacers: dict[int, MutationSpacer] = {}

    def for_installation(self, installation_id: int) -> MutationSpacer:
        spacer = self._spacers.get(installation_id)
        if spacer is None:
            spacer = MutationSpacer(self.interval, clock=self._clock, sleep=self._sleep)
            self._spacers[installation_id] = spacer
        return spacer


# The process's registry, for RepoClients not given one.
DEFAULT_SPACERS: Final = Spacers()
