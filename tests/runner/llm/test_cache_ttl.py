"""The one-hour cache after a long gap, on the wire: the loop, the real SDK, the fake API.

The fake models Anthropic's cache with a clock (entries live five minutes,
or an hour, after their last use), and a tool here stands for a test run by
moving that clock on; no test waits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from runner.agent import Agent
from runner.llm.anthropic import AnthropicProvider
from runner.llm.cache_ttl import LongCacheAfterGaps
from runner.llm.provider import Completed, Provider, StreamEvent
from runner.llm.retry import RetryPolicy
from runner.llm.types import JSONObject, Request, Response, SystemPrompt, Text, ToolSpec
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use

SCHEMA: JSONObject = {"type": "object", "properties": {"minutes": {"type": "number"}}}
SYSTEM = SystemPrompt(("You are Neo. " * 300, "The repository: a Python project. " * 100))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class RunTests:
    """Takes `minutes` of the clock, as a test suite takes wall time."""

    spec = ToolSpec("run_tests", "Run the tests.", SCHEMA)

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        minutes = args["minutes"]
        assert isinstance(minutes, float | int)
        self._clock.now += 60 * minutes
        return ToolOutput(f"ran for {minutes} minutes: 120 passed\n" * 40)


@pytest.fixture
async def anthropic(fake_anthropic: FakeAnthropicAPI) -> AsyncIterator[AnthropicProvider]:
    opened = AnthropicProvider(
        "claude-sonnet-5-5",
        api_key=fake_anthropic.api_key,
        base_url=fake_anthropic.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    yield opened
    await opened.aclose()


GAPS = [0.5, 6, 0.5, 6]  # minutes each tool call takes


def script(fake: FakeAnthropicAPI, clock: Clock) -> None:
    fake.prompt_cache = True
    fake.clock = clock
    for n, minutes in enumerate(GAPS):
        fake.script(Reply([tool_use(f"t{n}", "run_tests", {"minutes": minutes})], "tool_use"))
    fake.script(Reply([text("All green.")]))


def ttl_of(control: dict[str, Any] | None) -> str:
    return "none" if control is None else str(control.get("ttl", "5m"))


def placements(fake: FakeAnthropicAPI) -> list[tuple[str, str]]:
    """Each request's (stable prefix's, newest message's) breakpoint ttl."""
    found = []
    for request in fake.requests:
        body = request.body
        found.append(
            (
                ttl_of(body["system"][0].get("cache_control")),
                ttl_of(body["messages"][-1]["content"][-1].get("cache_control")),
            )
        )
    return found


async def run(provider: Provider, clock: Clock) -> list[Any]:
    agent = Agent(provider, tools=[RunTests(clock)], system=SYSTEM)
    await agent.send("Make the tests pass.")
    return [m.usage for m in agent.transcript() if m.role == "assistant"]


async def test_after_a_long_gap_the_prefix_then_everything_moves_to_the_hour_cache(
    fake_anthropic: FakeAnthropicAPI, anthropic: AnthropicProvider
) -> None:
    clock = Clock()
    script(fake_anthropic, clock)

    usages = await run(LongCacheAfterGaps(anthropic, clock=clock), clock)

    assert placements(fake_anthropic) == [
        ("5m", "5m"),
        ("5m", "5m"),
        ("1h", "5m"),  # the first call after 6 minutes: the prefix for an hour
        ("1h", "1h"),  # the next: the conversation too (then every third call)
        ("1h", "5m"),
    ]
    # The first long gap found the cache gone; the second found the hour's entries.
    after_first, after_second = usages[2], usages[4]
    assert after_first.cache_read_input_tokens == 0
    assert after_first.cache_creation_1h_input_tokens > 0
    assert after_second.cache_read_input_tokens > 5 * after_second.cache_creation_input_tokens
    # What it wrote, only the last call's part, was at five minutes' rate.
    assert after_second.cache_creation_1h_input_tokens == 0


async def test_without_it_every_long_gap_writes_the_whole_prompt_again(
    fake_anthropic: FakeAnthropicAPI, anthropic: AnthropicProvider
) -> None:
    clock = Clock()
    script(fake_anthropic, clock)

    usages = await run(anthropic, clock)

    assert set(placements(fake_anthropic)) == {("5m", "5m")}
    assert usages[2].cache_read_input_tokens == usages[4].cache_read_input_tokens == 0


async def test_short_gaps_keep_the_five_minute_cache(
    fake_anthropic: FakeAnthropicAPI, anthropic: AnthropicProvider
) -> None:
    clock = Clock()
    fake_anthropic.clock = clock
    for n in range(3):
        fake_anthropic.script(Reply([tool_use(f"t{n}", "run_tests", {"minutes": 3.9})], "tool_use"))
    fake_anthropic.script(Reply([text("All green.")]))
    keeper = LongCacheAfterGaps(anthropic, clock=clock)

    await run(keeper, clock)

    assert set(placements(fake_anthropic)) == {("5m", "5m")}
    assert not keeper.long


async def test_the_conversation_takes_the_hour_every_third_call() -> None:
    clock = Clock()
    seen: list[str] = []

    class Recorder:
        name, model = "recorder", "claude-sonnet-5-5"

        async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
            seen.append(request.cache_ttl)
            yield Completed(Response((Text("ok"),), "end_turn"))

    keeper = LongCacheAfterGaps(Recorder(), clock=clock)
    for pause in (10, 250, 10, 10, 10, 10, 10, 400, 10):
        async for _ in keeper.stream(Request(messages=())):
            pass
        clock.now += pause

    assert seen == [
        "short",
        "short",
        "long_prefix",
        "long",
        "long_prefix",
        "long_prefix",
        "long",
        "long_prefix",
        "long_prefix",
    ]
