"""One githubkit client's calls under `bot.github.core`'s policy: classified, retried, paged.

`RepoClient` and the App-level listings (`bot.github.installations`) share it,
so every read and effect fails, waits and follows `Link: rel="next"` the same
way. It works on a copy of the client with githubkit's own retry off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from githubkit.exception import RequestError, RequestFailed, RequestTimeout

from bot.github.core import Retry, RetryPolicy, classify, connection_failure, next_link, retry_wait
from bot.github.errors import GitHubError

if TYPE_CHECKING:
    from githubkit import GitHub
    from githubkit.response import Response

__all__ = ["DEFAULT_RETRY", "Caller", "Clock", "Sleep", "Transient"]

T = TypeVar("T")
R = TypeVar("R", bound="Response[Any, Any]")
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

DEFAULT_RETRY: Final = RetryPolicy()


class Transient(Exception):
    """A Retry on its way out of one attempt to `Caller.retrying`."""

    def __init__(self, retry: Retry) -> None:
        super().__init__(str(retry.error))
        self.retry = retry


class Caller:
    """Attempts through `client`, each failure a GitHubError or a Transient, and their retries.

    `now` (epoch seconds) reads `x-ratelimit-reset`; `sleep` waits between
    attempts. Tests replace both.
    """

    def __init__(
        self,
        client: GitHub[Any],
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Sleep = asyncio.sleep,
        now: Clock = time.time,
    ) -> None:
        config = dataclasses.replace(client.config, auto_retry=None)
        # Same auth, pool and caches; only the retry differs.
        self.github: GitHub[Any] = type(client)(client.auth, config=config)
        self._retry = retry
        self._sleep = sleep
        self._now = now

    async def call(self, method: str, path: str, request: Callable[[], Awaitable[R]]) -> R:
        """One attempt of `request` (`method path` names it in errors), never retried here."""
        try:
            return await request()
        except RequestFailed as failed:
            raise self._failed(method, path, failed) from None
        except RequestTimeout:
            raise Transient(connection_failure(method, path, None)) from None
        except RequestError as error:
            inner = error.exc
            if isinstance(inner, RequestFailed):
                # An auth flow's own request failed (githubkit minting an
                # installation token): GitHub's answer to it, not a lost connection.
                raw = inner.request
                raise self._failed(raw.method, raw.url.path, inner) from None
            raise Transient(connection_failure(method, path, type(inner).__name__)) from None

    def _failed(self, method: str, path: str, failed: RequestFailed) -> Exception:
        raw = failed.response.raw_response
        decision = classify(
            method,
            path,
            raw.status_code,
            raw.headers,
            raw.content,
            now=self._now(),
            reason=raw.reason_phrase,
        )
        return Transient(decision) if isinstance(decision, Retry) else decision

    async def retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt` until it succeeds, fails for good, or the policy gives up."""
        number = 1
        while True:
            try:
                return await attempt()
            except Transient as transient:
                wait = retry_wait(self._retry, number, transient.retry)
                if isinstance(wait, GitHubError):
                    raise wait from None
                await self._sleep(wait)
                number += 1

    async def each_page(
        self,
        path: str,
        first: Callable[[], Awaitable[Response[Any]]],
        model: type[Any],
        *,
        retried: bool = True,
    ) -> AsyncGenerator[Response[Any], None]:
        """The answers of a list, following `Link: rel="next"` from the `first` one.

        Later pages are parsed as `model`. Each page is retried on its own when
        `retried`; otherwise the caller retries the whole (a lookup retried
        together with its creation).
        """
        request = first
        while True:

            async def page(request: Callable[[], Awaitable[Response[Any]]] = request) -> Any:
                return await self.call("GET", path, request)

            response = await (self.retrying(page) if retried else page())
            yield response
            url = next_link(response.headers.get("link"))
            if url is None:
                return
            request = functools.partial(self.github.arequest, "GET", url, response_model=model)

    async def pages(
        self, path: str, first: Callable[[], Awaitable[Response[Any]]], model: type[list[T]]
    ) -> list[T]:
        """Every item of a list whose answers are JSON arrays, each page retried on its own."""
        items: list[T] = []
        async for response in self.each_page(path, first, model):
            items.extend(cast("list[T]", response.parsed_data))
        return items
