"""`bench/prompt_cache.py --gaps`: Anthropic's prompt cache across long tool runs.

A run of `turns` model calls goes through the real loop and adapter against
the fake Messages API, whose cache entries expire on a simulated clock: five
minutes after their last use, or an hour for `"ttl": "1h"`. The prompt is
Neo's own: its real tool definitions (Claude's set) and a system prompt of
about Neo's size. Every call but the last runs a command; the schedule says
how long each takes (20 s, or six minutes for a test suite), and 2 KB of its
output joins the conversation. Each schedule runs twice: with the
five-minute cache only, and with the rule of `runner/llm/cache_ttl.py`. What
a call's input is billed, in plain-input tokens: input 1x, cache reads 0.1x,
five-minute writes 1.25x, one-hour writes 2x.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.agent import Agent
from runner.llm.anthropic import AnthropicProvider
from runner.llm.cache_ttl import LongCacheAfterGaps
from runner.llm.provider import Provider
from runner.llm.types import JSONObject, SystemPrompt, ToolSpec, Usage
from runner.sandbox import LocalSandbox
from runner.tools import default_tools
from runner.tools.base import Tool, ToolContext, ToolOutput
from tests.fakes import anthropic_api

__all__ = ["SCHEDULES", "Schedule", "main", "run"]

# About the size of Neo's system prompt: its base segment, then a project's notes.
SYSTEM = SystemPrompt(
    (
        "You are Neo, a coding agent working in a repository's working tree. " * 90,
        "Project notes (AGENTS.md): a Python service with a test suite. " * 60,
    )
)
SHORT, LONG = 20.0, 360.0  # seconds a command takes: a quick one, a test suite


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str
    # Seconds the command of call n (1-based) takes.
    seconds: Callable[[int], float]


SCHEDULES = (
    Schedule("no long gap", lambda n: SHORT),
    Schedule("one test run (turn 20)", lambda n: LONG if n == 20 else SHORT),
    Schedule("a test run every 8 turns", lambda n: LONG if n % 8 == 0 else SHORT),
    Schedule("a test run every 4 turns", lambda n: LONG if n % 4 == 0 else SHORT),
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Command:
    """`bash` as the model sees it; it takes the schedule's time and prints 2 KB."""

    def __init__(self, spec: ToolSpec, clock: Clock, schedule: Schedule) -> None:
        self.spec = spec
        self._clock = clock
        self._schedule = schedule
        self._calls = 0

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        self._calls += 1
        n = self._calls
        self._clock.now += self._schedule.seconds(n)
        return ToolOutput("".join(f"step {n} test {i:03} passed\n" for i in range(80)))


def weighted(usage: Usage) -> float:
    """What a call's input is billed, in plain-input tokens."""
    hour = usage.cache_creation_1h_input_tokens
    return (
        usage.input_tokens
        + 0.1 * usage.cache_read_input_tokens
        + 1.25 * (usage.cache_creation_input_tokens - hour)
        + 2.0 * hour
    )


async def run(schedule: Schedule, turns: int, *, long_cache: bool) -> list[Usage]:
    """The usage of each of the run's `turns` calls."""
    clock = Clock()
    with anthropic_api.FakeAnthropicAPI() as fake, tempfile.TemporaryDirectory() as tree:
        fake.prompt_cache = True
        fake.clock = clock
        for n in range(1, turns):
            command = {"command": "uv run pytest -q"}
            call = anthropic_api.tool_use(f"toolu_{n:03}", "bash", command)
            fake.script(anthropic_api.Reply([anthropic_api.text(f"Step {n}."), call], "tool_use"))
        fake.script(anthropic_api.Reply([anthropic_api.text("Done.")]))
        real = default_tools(LocalSandbox(Path(tree)))
        tools: list[Tool] = [
            Command(t.spec, clock, schedule) if t.spec.name == "bash" else t for t in real
        ]
        adapter = AnthropicProvider(
            "claude-sonnet-4-6", api_key=fake.api_key, base_url=fake.base_url
        )
        provider: Provider = LongCacheAfterGaps(adapter, clock=clock) if long_cache else adapter
        try:
            agent = Agent(provider, tools=tools, system=SYSTEM, max_turns=turns + 1)
            await agent.send("Make the test suite pass.")
        finally:
            await adapter.aclose()
        return [m.usage for m in agent.transcript() if m.role == "assistant" and m.usage]


def row(name: str, short: Sequence[Usage], long: Sequence[Usage]) -> str:
    before = sum(map(weighted, short)) / len(short)
    after = sum(map(weighted, long)) / len(long)
    hour = sum(u.cache_creation_1h_input_tokens for u in long) / len(long)
    saved = 100 * (1 - after / before)
    return (
        f"{name:<28} {len(short):>5} {before:>12,.0f} {after:>12,.0f} {hour:>10,.0f} {saved:>7.1f}%"
    )


def main(turns: int) -> None:
    print(
        f"{'schedule':<28} {'calls':>5} {'5m only':>12} {'with 1h':>12} {'1h writes':>10}"
        f" {'saved':>8}"
    )
    print(f"{'':<28} {'':>5} {'(weighted input tokens per call)':>25}")
    for schedule in SCHEDULES:
        short = asyncio.run(run(schedule, turns, long_cache=False))
        long = asyncio.run(run(schedule, turns, long_cache=True))
        print(row(schedule.name, short, long))
