"""A long task with and without compaction: what it is billed, what the cache serves.

A scripted 150-turn task whose every tool call returns 20 KB runs through
the real Anthropic adapter against the fake Messages API (the fake's usage
grows with the request, about 4 characters a token). The requests it sent
are then priced with a model of Anthropic's prompt cache: a request reads
from the cache the longest prefix, ending within 20 blocks before one of its
cache breakpoints, that an earlier request wrote at one of its breakpoints
less than 5 minutes before (turns are 10 s apart), writes the rest up to its
last breakpoint, and pays plain input for anything after.

Printed, with compaction (the model's real 200k window enforced by the fake)
and without (the window lifted, to show what the run would cost if it fit):
input tokens billed per turn (plain, cache write, cache read, and their
price-weighted sum in plain-input tokens), the share of input read from the
cache, the peak request size, and the compactions made. Then the loop's own
overhead per turn with the compactor on, from an in-process provider.

    uv run python -m bench.long_run [--turns 150] [--output 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from runner.agent import Agent, Compacted, Event, TurnStarted
from runner.compact import WindowCompactor
from runner.compact.tokens import estimate_prompt
from runner.llm.anthropic import AnthropicProvider
from runner.llm.limits import limits_for
from runner.llm.provider import Completed, StreamEvent
from runner.llm.retry import RetryPolicy
from runner.llm.types import (
    END_TURN,
    TOOL_USE,
    JSONObject,
    Request,
    Response,
    Text,
    ToolSpec,
    ToolUse,
    Usage,
)
from runner.tools.base import ToolContext, ToolOutput
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.fakes.anthropic_api import prompt_tokens

MODEL = "claude-sonnet-5-5"
TTL = 300.0
TURN_SECONDS = 10.0
LOOKBACK = 20
# Prices relative to plain input: a cache write costs 1.25x, a read 0.1x.
WRITE, READ = 1.25, 0.10


class Logs:
    """A tool returning `size` bytes of text that differs from call to call."""

    spec = ToolSpec(
        "read_log",
        "Read a log file.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )

    def __init__(self, size: int) -> None:
        self.size = size
        self.seconds = 0.0

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        started = time.perf_counter()
        n = int(str(args["n"]))
        line = f"{n:06d} worker={n % 7} step ok; queue depth nominal\n"
        output = (line * (self.size // len(line) + 1))[: self.size]
        self.seconds += time.perf_counter() - started
        return ToolOutput(output)


def task(turns: int) -> Any:
    made = 0

    def reply(body: dict[str, Any]) -> Reply:
        nonlocal made
        if not body.get("tools"):
            return Reply([text("## Task\n- read all logs\n## Next steps\n- read the next log")])
        if made < turns:
            made += 1
            return Reply([tool_use(f"c{made}", "read_log", {"n": made})], "tool_use")
        return Reply([text("All logs read.")])

    return reply


# --- the cache model ----------------------------------------------------------------


@dataclass
class Billed:
    plain: int = 0
    write: int = 0
    read: int = 0

    @property
    def total(self) -> int:
        return self.plain + self.write + self.read

    @property
    def weighted(self) -> float:
        return self.plain + WRITE * self.write + READ * self.read


def _items(body: dict[str, Any]) -> list[tuple[str, int, bool]]:
    """The request as (hash of the prefix so far, tokens of this item, breakpoint?)."""
    items: list[tuple[str, bool]] = [
        (json.dumps(t, sort_keys=True), False) for t in body.get("tools", [])
    ]
    for block in body.get("system", []):
        items.append((json.dumps(block, sort_keys=True), "cache_control" in block))
    for message in body["messages"]:
        for block in message["content"]:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            items.append(
                (message["role"] + json.dumps(plain, sort_keys=True), "cache_control" in block)
            )
    digest = hashlib.sha256()
    out = []
    for serialised, marked in items:
        digest.update(serialised.encode())
        out.append((digest.copy().hexdigest(), max(1, len(serialised) // 4), marked))
    return out


def bill(bodies: Sequence[dict[str, Any]]) -> list[Billed]:
    written: dict[str, float] = {}
    bills = []
    for turn, body in enumerate(bodies):
        now = turn * TURN_SECONDS
        items = _items(body)
        breakpoints = [i for i, (_, _, marked) in enumerate(items) if marked]
        hit = -1
        for point in breakpoints:
            for i in range(point, max(-1, point - LOOKBACK), -1):
                seen = written.get(items[i][0])
                if seen is not None and now - seen < TTL:
                    hit = max(hit, i)
                    break
        last = breakpoints[-1] if breakpoints else -1
        tokens = [n for _, n, _ in items]
        read = sum(tokens[: hit + 1])
        write = sum(tokens[hit + 1 : last + 1])
        plain = sum(tokens[last + 1 :])
        bills.append(Billed(plain, write, read))
        for i in breakpoints:
            written[items[i][0]] = now
        if hit >= 0:
            written[items[hit][0]] = now  # a read refreshes the entry's TTL
    return bills


# --- the runs -----------------------------------------------------------------------


async def run(turns: int, output: int, *, compact: bool) -> dict[str, Any]:
    with FakeAnthropicAPI() as fake:
        window = limits_for(MODEL).context_window
        fake.context_window = window if compact else None
        fake.script(*([task(turns)] * (turns * 2 + 10)))
        provider = AnthropicProvider(
            MODEL, api_key=fake.api_key, base_url=fake.base_url, retry=RetryPolicy(max_retries=0)
        )
        events: list[Event] = []
        compactor = WindowCompactor(provider) if compact else None
        agent = Agent(
            provider,
            tools=[Logs(output)],
            max_turns=turns + 10,
            compactor=compactor,
            on_event=events.append,
        )
        try:
            await agent.send("Read every log, one per call, and say when done.")
        finally:
            await provider.aclose()
        bodies = [r.body for r in fake.requests if r.body.get("tools")]
        sizes = [prompt_tokens(b) for b in bodies]
        return {
            "bills": bill(bodies),
            "peak": max(sizes),
            "over_window": next((n + 1 for n, s in enumerate(sizes) if s > window), None),
            "compactions": [e for e in events if isinstance(e, Compacted)],
            "window": window,
        }


class InProcess:
    """A provider answering at once, its usage the size of what it was sent."""

    name = "bench"
    model = MODEL

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0
        self.seconds = 0.0

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        started = time.perf_counter()
        size = estimate_prompt(request.messages, request.system, request.tools)
        if not request.tools:
            response = Response((Text("## Task\n- go on"),), END_TURN, Usage(size, 50))
        elif self.calls < self.turns:
            self.calls += 1
            use = ToolUse(f"c{self.calls}", "read_log", {"n": self.calls})
            response = Response((use,), TOOL_USE, Usage(size, 20))
        else:
            response = Response((Text("done"),), END_TURN, Usage(size, 5))
        self.seconds += time.perf_counter() - started
        yield Completed(response)


async def overhead(turns: int, output: int) -> list[float]:
    """Per turn: wall time less the time spent in the provider and the tool, in ms."""
    provider = InProcess(turns)
    tool = Logs(output)
    marks: list[tuple[float, float]] = []

    def mark(event: Event) -> None:
        if isinstance(event, TurnStarted):
            marks.append((time.perf_counter(), provider.seconds + tool.seconds))

    agent = Agent(
        provider,
        tools=[tool],
        max_turns=turns + 10,
        compactor=WindowCompactor(provider),
        on_event=mark,
    )
    await agent.send("Read every log.")
    marks.append((time.perf_counter(), provider.seconds + tool.seconds))
    return [((t2 - t1) - (o2 - o1)) * 1000 for (t1, o1), (t2, o2) in itertools.pairwise(marks)]


def report(name: str, result: dict[str, Any]) -> None:
    bills: list[Billed] = result["bills"]
    total = Billed(
        sum(b.plain for b in bills), sum(b.write for b in bills), sum(b.read for b in bills)
    )
    turns = len(bills)
    print(f"{name}: {turns} requests")
    print(
        f"  billed input per turn: plain {total.plain / turns:,.0f}, cache write"
        f" {total.write / turns:,.0f}, cache read {total.read / turns:,.0f} tokens;"
        f" price-weighted {total.weighted / turns:,.0f} plain-input tokens"
    )
    print(f"  served from cache: {100 * total.read / total.total:.1f}% of input tokens")
    print(f"  peak request: {result['peak']:,} tokens (window {result['window']:,})")
    if result["over_window"] is not None:
        print(f"  request {result['over_window']} would not fit the model's window")
    stages = [c.stage for c in result["compactions"]]
    if stages:
        print(
            f"  compactions: {stages.count('cleared')} cleared, {stages.count('summarised')}"
            " summarised"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--output", type=int, default=20_000, help="bytes per tool result")
    args = parser.parse_args()
    report("with compaction", await run(args.turns, args.output, compact=True))
    report("without compaction", await run(args.turns, args.output, compact=False))
    per_turn = await overhead(args.turns, args.output)
    print(
        f"loop overhead per turn, compactor on: median {statistics.median(per_turn):.2f} ms,"
        f" p90 {statistics.quantiles(per_turn, n=10)[-1]:.2f} ms over {len(per_turn)} turns"
    )


if __name__ == "__main__":
    asyncio.run(main())
