"""The retry loop every adapter shares: attempts, the policy's waits, the idle guard,
and what a request that got no answer says (connection.py)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

from runner.connection import Endpoint, describe, proxy_for, request_url
from runner.errors import ConfigError
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
        self,
        error: ProviderError,
        retry_after: float | None = None,
        *,
        idle: bool = False,
        connect: bool = False,
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.idle = idle
        # No connection was made: the policy's few short retries.
        self.connect = connect


def idle_failure(provider: str) -> Transient:
    """A stream silent for the whole read timeout: the idle guard's retry."""
    return Transient(
        ProviderConnectionError(f"{provider}: no data received within the idle timeout"),
        idle=True,
    )


def connection_failure(endpoint: Endpoint, error: BaseException) -> Transient | ConfigError:
    """A request that got no HTTP answer, or an SDK's wrapping of one: a
    retryable failure saying host, cause and what to check (connection.py), a
    ConfigError for a setting no attempt can use; a read or write timeout
    underneath is the idle guard's."""
    cause = error if isinstance(error, httpx2.TransportError) else (error.__cause__ or error)
    if isinstance(cause, (httpx2.ReadTimeout, httpx2.WriteTimeout)):
        return idle_failure(endpoint.provider)
    log.debug("%s: no answer", endpoint.provider, exc_info=error)
    failure = describe(endpoint, error, proxy=proxy_for(request_url(error)))
    if failure.config:
        return ConfigError(failure.line)
    return Transient(ProviderConnectionError(failure.line), connect=failure.connect)


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
    connects = 0
    while True:
        try:
            async for event in attempt():
                yield event
            return
        except Transient as failure:
            retry += 1
            idle += failure.idle
            if failure.connect:
                connects += 1
                delay = policy.connect_delay(connects)
            else:
                delay = policy.delay(retry, failure.retry_after)
            if delay is None or idle > IDLE_RETRIES:
                raise failure.error from None
            log.info("%s: %s; retry %d in %.1fs", name, failure.error, retry, delay)
            yield Retrying(retry, delay, str(failure.error))
            await sleep(delay)
