"""What metering a call costs, and how far its reservation is above what it is billed.

For transcripts of 50 and 200 tool turns (2 KB of tool output each; 200
turns are about 110,000 tokens at four characters a token, within the
model's window), this prints per turn:

- `meter ms`: the median time `MeteredProvider` adds to a call: bounding the
  prompt (the conversation's last counted request found, the new messages'
  bytes summed), quoting, reserving and settling on the ledger (with a
  limit, the wrap-up kept back);
- `bound / true`: the prompt bound the reservation is made on, over the
  prompt's size counted as four characters a token (what a provider would
  bill for such text), for the turn after a counted one and for a rewritten
  conversation (after a compaction: nothing counted yet);
- `reserved / billed`: for claude-sonnet-4-6, what the call reserved over what
  it is billed when it reads its prompt from the cache but the new turn's
  tokens, and writes 1,000 tokens of its 32,000 allowed.

The targets: at most 1 ms a turn of metering at 200 turns; the bound within
1.3x of the true size after a counted request. Measured: 0.14 and 0.20 ms;
1.07x and 1.03x (4x with nothing counted); 26x and 23x reserved.

    uv run python -m bench.spend_ledger [--repeat 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import AsyncIterator

from runner.llm.pricing import PricedProvider, cost_usd
from runner.llm.provider import Completed, StreamEvent
from runner.llm.types import (
    END_TURN,
    Message,
    Request,
    Response,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from runner.spend import Ledger, MeteredProvider, bound_request

MODEL = "claude-sonnet-4-6"
SYSTEM = SystemPrompt(("You are Neo." * 200, "Project notes." * 500))
TOOLS = tuple(
    ToolSpec(f"tool{i}", "Does a thing. " * 20, {"type": "object", "properties": {}})
    for i in range(10)
)


def turn(n: int) -> tuple[Message, Message]:
    call = ToolUse(f"t{n}", "bash", {"command": f"pytest -k case{n}"})
    output = "".join(f"line {n}.{i}: some output of the command\n" for i in range(60))
    return (
        Message("assistant", (Text(f"Running case {n}."), call), Usage(10, 20)),
        Message("user", (ToolResult(f"t{n}", (Text(output[:2_000]),)),)),
    )


def transcript(turns: int) -> list[Message]:
    messages = [Message("user", (Text("Fix the failing tests."),))]
    for n in range(turns):
        messages.extend(turn(n))
    return messages


def true_tokens(request: Request) -> int:
    """What a provider would count: about four characters a token."""
    return bound_request(request) // 4


class Counting:
    """A provider that answers at once, counting the prompt as `true_tokens`."""

    name = "anthropic"
    model = MODEL

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        usage = Usage(input_tokens=true_tokens(request), output_tokens=1_000)
        yield Completed(Response((Text("ok"),), END_TURN, usage, MODEL))


async def call(provider: MeteredProvider, request: Request) -> None:
    async for _ in provider.stream(request):
        pass


def measure(turns: int, repeat: int) -> dict[str, float]:
    messages = transcript(turns)
    times: list[float] = []
    history = list(messages)
    for n in range(repeat):
        metered = MeteredProvider(PricedProvider(Counting()), Ledger(10.0))
        # The conversation's previous request, counted by the provider.
        asyncio.run(call(metered, Request(tuple(history), SYSTEM, TOOLS)))
        history.extend(turn(turns + n))
        follow = Request(tuple(history), SYSTEM, TOOLS)
        answered = Usage(input_tokens=1_000, output_tokens=1_000, cost_usd=0.02)
        ledger = metered.ledger
        gc.disable()
        started = time.perf_counter()
        # What the meter adds to a call: the bound, the quote, the reservation, the settling.
        quotes = metered.quotes(metered.prompt_bound(follow))
        grant = ledger.reserve(ledger.main, quotes, follow.max_tokens)
        ledger.settle(grant, quotes[0], answered)
        times.append(time.perf_counter() - started)
        gc.enable()
    history = [*messages, *turn(turns)]
    follow = Request(tuple(history), SYSTEM, TOOLS)
    counted = MeteredProvider(PricedProvider(Counting()), Ledger(None))
    asyncio.run(call(counted, Request(tuple(messages), SYSTEM, TOOLS)))
    after_count = counted.quotes(counted.prompt_bound(follow))[0].prompt_tokens
    # Reserved against billed on a $100 limit: cached prompt, fresh turn written.
    ledger = Ledger(100.0)
    ledger.main.keeps_wrap_up = False
    grant = ledger.reserve(ledger.main, counted.quotes(after_count), 32_000)
    fresh = true_tokens(follow) - true_tokens(Request(tuple(messages), SYSTEM, TOOLS))
    billed = cost_usd(
        MODEL,
        Usage(
            input_tokens=0,
            output_tokens=1_000,
            cache_creation_input_tokens=fresh,
            cache_read_input_tokens=true_tokens(follow) - fresh,
        ),
        "anthropic",
    )
    assert billed is not None
    return {
        "meter_ms": statistics.median(times) * 1000,
        "counted": after_count / true_tokens(follow),
        "rewritten": bound_request(follow) / true_tokens(follow),
        "reserved": grant.amount / billed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print(
        f"{'turns':>5} {'meter ms':>9} {'bound/true':>11} {'rewritten':>10} {'reserved/billed':>16}"
    )
    failed = False
    for turns in (50, 200):
        got = measure(turns, args.repeat)
        print(
            f"{turns:>5} {got['meter_ms']:>9.3f} {got['counted']:>11.2f}"
            f" {got['rewritten']:>10.2f} {got['reserved']:>16.1f}"
        )
        failed |= turns == 200 and got["meter_ms"] > 1.0
        failed |= got["counted"] > 1.3
    print("targets:", "missed" if failed else "met")


if __name__ == "__main__":
    main()
