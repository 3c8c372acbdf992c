"""A second provider for when the first is down: `fallback:` in the config.

The primary gets every call until one fails in a way its own retries could
not fix (429, 5xx, or no connection); from then on the run stays with the
fallback, so later calls do not pay the primary's waits again. The switch is
announced as a `Retrying` event, which voids any text the failed attempt
streamed, and each response names the model that produced it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from runner.llm.errors import ContextOverflow, ProviderConnectionError, ProviderHTTPError
from runner.llm.provider import (
    Provider,
    Retrying,
    StreamEvent,
    close_provider,
    prepare_provider,
)
from runner.llm.types import Request

__all__ = ["FallbackProvider", "falls_back", "may_answer", "models_of", "with_fallback"]

log = logging.getLogger("neo.llm")

# Error types that arrive inside an already-started stream (under a 200) and
# mean the service, not the request, is at fault.
_SERVICE_ERRORS = frozenset(
    {"overloaded_error", "api_error", "server_error", "server_is_overloaded", "rate_limit_exceeded"}
)


def falls_back(error: BaseException) -> bool:
    """Whether `error`, raised once a provider gave up, means it is unavailable."""
    if isinstance(error, ProviderConnectionError):
        return True
    if not isinstance(error, ProviderHTTPError) or isinstance(error, ContextOverflow):
        return False
    status = error.status
    return status == 429 or status >= 500 or (status < 400 and error.error_type in _SERVICE_ERRORS)


class FallbackProvider:
    """`primary` until it is unavailable, then `fallback` for the rest of the run."""

    def __init__(self, primary: Provider, fallback: Provider) -> None:
        self._primary = primary
        self._fallback = fallback
        self._failed_over = False
        self._reason: str | None = None

    @property
    def name(self) -> str:
        return self._current.name

    @property
    def model(self) -> str:
        return self._current.model

    @property
    def models(self) -> tuple[str, ...]:
        """The models that answered, in order: the primary's, then the fallback's."""
        if not self._failed_over:
            return (self._primary.model,)
        return (self._primary.model, self._fallback.model)

    @property
    def candidates(self) -> tuple[Provider, ...]:
        """The providers that may answer the next call: both until the fallback took over."""
        if self._failed_over:
            return (self._fallback,)
        return (self._primary, self._fallback)

    @property
    def reason(self) -> str | None:
        """Why the fallback took over (the primary's last error), if it did."""
        return self._reason

    async def aclose(self) -> None:
        await close_provider(self._primary)
        await close_provider(self._fallback)

    async def prepare(self) -> None:
        await prepare_provider(self._primary)
        await prepare_provider(self._fallback)

    @property
    def _current(self) -> Provider:
        return self._fallback if self._failed_over else self._primary

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        if not self._failed_over:
            try:
                async for event in self._primary.stream(request):
                    yield event
                return
            except (ProviderHTTPError, ProviderConnectionError) as error:
                if not falls_back(error):
                    raise
                self._failed_over = True
                self._reason = str(error)
                log.warning("%s; falling back to %s", error, self._fallback.model)
                yield Retrying(0, 0.0, str(error), fallback=self._fallback.model)
        async for event in self._fallback.stream(request):
            yield event


def with_fallback(
    make: Callable[[str, str | None], Provider],
    provider: str,
    model: str | None,
    fallback: tuple[str, str | None] | None,
) -> Provider:
    """The provider a run uses: `make(provider, model)`, then `fallback`'s when
    that one is unavailable. Both are built now, so missing credentials for
    either fail before the run starts."""
    primary = make(provider, model)
    return primary if fallback is None else FallbackProvider(primary, make(*fallback))


def models_of(provider: Provider) -> tuple[tuple[str, ...], str | None]:
    """The models that did a run's work, in order, and why a fallback took over."""
    if isinstance(provider, FallbackProvider):
        return provider.models, provider.reason
    return (provider.model,), None


def may_answer(provider: Provider) -> tuple[tuple[str, str], ...]:
    """The (provider name, model) pairs that may answer `provider`'s next call."""
    if isinstance(provider, FallbackProvider):
        return tuple(pair for p in provider.candidates for pair in may_answer(p))
    return ((provider.name, provider.model),)
