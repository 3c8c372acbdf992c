"""The retry loop every adapter shares: attempts, the policy's waits, the idle guard."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

from runner.llm.errors import ProviderConnectionError, ProviderError
from runner.llm.provider import Retrying, StreamEvent
from runner.llm.retry import RetryPolicy

__all__ = ["IDLE_RETRIES", "Transient", "connection_failure", "idle_failure", "retried"]

log = logging.getLogger("neo.llm")

# A stream idle for the whole read timeout is worth one more try, not eight:
# each costs the whole timeout again.
IDLE_RETRIES = 1


class Transient(Exception):
    """An attempt failed in a way that another attempt may not."""

    def __init__(
        self, error: ProviderError, retry_after: float | None = None, *, idle: bool = False
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.idle = idle


def idle_failure(provider: str) -> Transient:
    """A stream silent for the whole read timeout: the idle guard's retry."""
    return Transient(
        ProviderConnectionError(f"{provider}: no data received within the idle timeout"),
        idle=True,
    )


def connection_failure(provider: str, error: BaseException, *, hint: str = "") -> Transient:
    """A transport failure, or an SDK's wrapping of one, as a retryable failure;
    a read timeout underneath is the idle guard's."""
    cause = error if isinstance(error, httpx2.TransportError) else (error.__cause__ or error)
    if isinstance(cause, httpx2.TimeoutException):
        return idle_failure(provider)
    line = f"{provider}: connection failed: {type(cause).__name__}"
    return Transient(ProviderConnectionError(f"{line} ({hint})" if hint else line))


async def retried(
    attempt: Callable[[], AsyncIterator[StreamEvent]],
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]],
    name: str,
) -> AsyncIterator[StreamEvent]:
    """The events of `attempt()`, started over after each `Transient` the policy allows.

    A retry is announced as `Retrying` (text streamed so far is void); when the
    policy gives up, or a second idle stream comes, the last error is raised.
    """
    retry = 0
    idle = 0
    while True:
        try:
            async for event in attempt():
                yield event
            return
        except Transient as failure:
            retry += 1
            idle += failure.idle
            delay = policy.delay(retry, failure.retry_after)
            if delay is None or idle > IDLE_RETRIES:
                raise failure.error from None
            log.info("%s: %s; retry %d in %.1fs", name, failure.error, retry, delay)
            yield Retrying(retry, delay, str(failure.error))
            await sleep(delay)
