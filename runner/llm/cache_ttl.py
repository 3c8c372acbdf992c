"""When a conversation's prompt cache should last an hour rather than five minutes.

Anthropic keeps a cached prefix five minutes after its last use. A run that
waits on a long command (a test suite) comes back to an empty cache and
writes its whole prompt again, at 1.25x the input rate, where a read costs
0.1x. A one-hour entry survives that wait, but a write to it costs 2x; it
pays when such waits come again, as they do in a run that tests, fixes and
tests again. So once a gap of `GAP_SECONDS` (about four minutes: near the
five-minute expiry) is seen between one call and the next, for the rest of
the run:

- the stable prefix (tools, system prompt) is cached for an hour: the call
  after the gap writes it again anyway, at 2x instead of 1.25x, and later
  calls read it;
- so is the conversation, on the first call after that one and every
  `EVERY`-th call on. Anthropic bills a write from the longest cache hit on,
  so such a call pays 2x instead of 1.25x on its own new tokens alone, while
  the entry it makes covers the whole conversation: a later long gap reads
  all but the last few calls' tokens at 0.1x instead of writing them at
  1.25x. Every third call, not every call, keeps that premium a third
  (`bench/prompt_cache.py --gaps`: with one test run in 60 calls the rule
  costs 4.8% more than five minutes alone, 10.6% with every call; with one
  every 8 or 4 calls it saves 43% and 60%).

Gaps are measured from one call's start to the next's, since a cache entry
ages from when its prompt was read: a long generation counts too.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from runner.llm.provider import Provider, StreamEvent, close_provider, prepare_provider
from runner.llm.types import CacheTTL, Request

__all__ = ["EVERY", "GAP_SECONDS", "LongCacheAfterGaps"]

GAP_SECONDS = 240.0
EVERY = 3


class LongCacheAfterGaps:
    """`inner` for one conversation, its prompt cache kept an hour once calls were far apart."""

    def __init__(
        self,
        inner: Provider,
        *,
        gap: float = GAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._gap = gap
        self._clock = clock
        self._last: float | None = None
        # Calls since the gap that turned the rule on; None before it.
        self._since: int | None = None

    @property
    def inner(self) -> Provider:
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def long(self) -> bool:
        """Whether a long gap was seen: the run's cache is kept an hour from now on."""
        return self._since is not None

    async def aclose(self) -> None:
        await close_provider(self._inner)

    async def prepare(self) -> None:
        await prepare_provider(self._inner)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        now = self._clock()
        if self._since is not None:
            self._since += 1
        elif self._last is not None and now - self._last >= self._gap:
            self._since = 0
        self._last = now
        ttl: CacheTTL = "short"
        if self._since is not None:
            ttl = "long" if self._since % EVERY == 1 else "long_prefix"
        if request.cache_ttl != ttl:
            request = replace(request, cache_ttl=ttl)
        async for event in self._inner.stream(request):
            yield event
