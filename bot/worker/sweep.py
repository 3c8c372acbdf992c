"""When a worker may put expired leases back: only once the queue has answered it for a
whole lease.

While the queue is away no heartbeat goes through, so every lease runs out,
the live holders' with the dead ones'. Once it is back, a live holder renews
its lease at its next heartbeat (one that ran out but was not swept is still
its own), within a quarter of a lease; swept before that, every running job
on every host would stop and run again. A worker that starts sweeps at once:
it cannot have seen the queue away.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["SweepGate"]


class SweepGate:
    """What a worker learned of the queue's answers, and whether it may sweep now."""

    def __init__(self, clock: Callable[[], float], lease: float) -> None:
        self._clock = clock
        self._lease = lease
        # Since when the queue has answered without a failure; None while it does not.
        self._answering_since: float | None = -math.inf

    def answered(self) -> None:
        if self._answering_since is None:
            self._answering_since = self._clock()

    def unanswered(self) -> None:
        self._answering_since = None

    def open(self) -> bool:
        since = self._answering_since
        return since is not None and self._clock() - since >= self._lease
