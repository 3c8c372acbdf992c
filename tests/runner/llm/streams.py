"""What the adapter tests share: a first request, recorded waits, a stream
collected, an adapter pointed at its fake, the bodies the fake received, and
the providers a test opened, closed after it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from runner.llm.provider import Completed, Provider, StreamEvent
from runner.llm.retry import RetryPolicy
from runner.llm.types import Message, Request, Text
from tests.fakes.scripted_server import ScriptedServer

__all__ = ["HELLO", "OPENED", "Adapter", "Sleeps", "collect", "completed", "opened", "sent_body"]

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


def sent_body(fake: ScriptedServer[Any], n: int) -> dict[str, Any]:
    """The JSON body of the n-th request `fake` received."""
    sent = fake.requests[n].body
    assert isinstance(sent, dict)
    return sent


@dataclass(frozen=True, slots=True)
class Adapter(Generic[_P]):
    """Builds `make` pointed at a fake: its key, quick retries whose waits are
    recorded (`sleeps`), closed when the test ends."""

    make: Callable[..., _P]
    model: str

    def __call__(
        self,
        fake: Any,
        sleeps: Sleeps | None = None,
        *,
        model: str | None = None,
        api_key: str | None = None,
        idle_timeout: float = 180.0,
        max_retries: int = 8,
    ) -> _P:
        made = self.make(
            model or self.model,
            api_key=api_key or fake.api_key,
            base_url=fake.base_url,
            idle_timeout=idle_timeout,
            retry=RetryPolicy(max_retries=max_retries, base_delay=0.01, max_delay=0.05),
            sleep=sleeps or Sleeps(),
        )
        return opened(made)
