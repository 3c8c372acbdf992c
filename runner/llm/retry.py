"""When and how long to wait before retrying a provider call.

Pure: the adapters decide what is transient and do the waiting; this module
only turns an attempt number and a server's `retry-after` into a delay.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Waits between attempts: long ones for an answer that was an error (429,
    5xx, a broken stream), a few short ones for a connection that could not be
    made at all, which is more often a setting or an offline machine than an
    outage: it ends in seconds, so the user (or a fallback) can act.
    """

    max_retries: int = 8
    base_delay: float = 1.0
    max_delay: float = 60.0
    # A server asking for a longer pause than this is not waited for.
    max_retry_after: float = 300.0
    connect_retries: int = 2
    connect_base_delay: float = 0.5

    def delay(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `retry` (from 1), or None to give up."""
        if retry > self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        # Jitter keeps many clients from retrying in lockstep.
        return backoff * (0.5 + random.random() / 2)  # noqa: S311

    def connect_delay(self, retry: int) -> float | None:
        """Seconds to wait before connection retry number `retry` (from 1), or None."""
        if retry > self.connect_retries:
            return None
        return self.connect_base_delay * 2.0 ** (retry - 1) * (0.5 + random.random() / 2)  # noqa: S311

    def connect_seconds(self, connect_timeout: float) -> float:
        """The longest a call that never connects takes: every attempt timing out."""
        waits = sum(self.connect_base_delay * 2.0**i for i in range(self.connect_retries))
        return (self.connect_retries + 1) * connect_timeout + waits


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a response asks for: `retry-after-ms`, then `retry-after` as
    seconds or as an HTTP date. None when absent or unreadable."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
