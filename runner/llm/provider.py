"""The plug point every model backend implements."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from runner.llm.types import Request, Response


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """The attempt failed transiently; the provider waits `delay` seconds and
    starts the response over, so text streamed so far is void."""

    attempt: int
    delay: float
    reason: str
    # The model taking over when another provider does (a fallback), at once.
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class Completed:
    response: Response


StreamEvent: TypeAlias = TextDelta | Retrying | Completed


class Provider(Protocol):
    """A model backend: turns a request into a stream that ends in `Completed`.

    Implementations retry transient failures themselves and raise
    `ProviderHTTPError` or `ProviderConnectionError` when they give up.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


async def close_provider(provider: Provider) -> None:
    """Close `provider`'s connections, if any: a failure to close does not fail the run."""
    close = getattr(provider, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


async def prepare_provider(provider: Provider) -> None:
    """Let `provider` check, before a run, what it can (a local server's window).

    Raises ConfigError when the provider refuses the run; providers with
    nothing to check have no `prepare`.
    """
    prepare = getattr(provider, "prepare", None)
    if prepare is not None:
        await prepare()
