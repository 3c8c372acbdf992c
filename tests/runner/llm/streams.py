"""What the adapter tests share: a first request, recorded waits, a stream
collected, and the providers a test opened, closed after it."""

from __future__ import annotations

from typing import TypeVar

from runner.llm.provider import Completed, Provider, StreamEvent
from runner.llm.types import Message, Request, Text

__all__ = ["HELLO", "OPENED", "Sleeps", "collect", "completed", "opened"]

HELLO = Request(messages=(Message("user", (Text("hello"),)),))

_P = TypeVar("_P", bound=Provider)

# Closed after each test by tests/runner/llm/conftest.py.
OPENED: list[Provider] = []


class Sleeps:
    """Records the waits an adapter asks for instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def opened(provider: _P) -> _P:
    """`provider`, closed when the test ends."""
    OPENED.append(provider)
    return provider


async def collect(provider: Provider, request: Request = HELLO) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def completed(events: list[StreamEvent]) -> Completed:
    assert isinstance(events[-1], Completed)
    return events[-1]
