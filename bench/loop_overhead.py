"""The agent loop's own cost per turn, without provider or tool time.

A scripted in-process provider asks for one tool call per turn; the tool
returns 10 KB at once. For transcripts of 50, 100 and 200 turns this prints
the median loop overhead per turn (wall time of the turn minus the time spent
inside the provider and the tool), the median over the last tenth of the run
(where the transcript is longest), and the peak memory of a separate run.

    uv run python -m bench.loop_overhead [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
import tracemalloc
from collections.abc import AsyncIterator

from runner.agent import Agent, Event, TurnStarted
from runner.llm.provider import Completed, StreamEvent
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

OUTPUT = ("x" * 99 + "\n") * 100  # 10 KB, 100 lines
SIZES = (50, 100, 200)


class Clock:
    """Time spent outside the loop: in the provider and in tools."""

    def __init__(self) -> None:
        self.outside = 0.0


class TimedProvider:
    name = "bench"
    model = "bench-1"

    def __init__(self, turns: int, clock: Clock) -> None:
        self._turns = turns
        self._calls = 0
        self._clock = clock

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        started = time.perf_counter()
        self._calls += 1
        if self._calls > self._turns:
            response = Response((Text("done"),), END_TURN, Usage(10, 5))
        else:
            use = ToolUse(f"call_{self._calls}", "echo", {"text": "hello", "n": self._calls})
            response = Response((Text("working"), use), TOOL_USE, Usage(10, 5))
        self._clock.outside += time.perf_counter() - started
        yield Completed(response)


class EchoTool:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    @property
    def spec(self) -> ToolSpec:
        schema: JSONObject = {
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"],
            "additionalProperties": False,
        }
        return ToolSpec("echo", "Echo a fixed 10 KB output.", schema)

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        started = time.perf_counter()
        # A fresh string per call, as a real tool's output would be.
        output = ToolOutput(f"{args['n']}\n{OUTPUT}")
        self._clock.outside += time.perf_counter() - started
        return output


async def run_once(turns: int) -> list[float]:
    """Per-turn loop overhead in seconds for one run of `turns` tool turns."""
    clock = Clock()
    marks: list[tuple[float, float]] = []

    def on_event(event: Event) -> None:
        if isinstance(event, TurnStarted):
            marks.append((time.perf_counter(), clock.outside))

    agent = Agent(
        TimedProvider(turns, clock),
        tools=[EchoTool(clock)],
        max_turns=turns + 1,
        on_event=on_event,
    )
    await agent.send("go")
    marks.append((time.perf_counter(), clock.outside))
    return [
        (end - start) - (outside_end - outside_start)
        for (start, outside_start), (end, outside_end) in itertools.pairwise(marks)
    ]


def peak_memory(turns: int) -> int:
    tracemalloc.start()
    asyncio.run(run_once(turns))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per size (default 5)")
    args = parser.parse_args()

    print(f"{'turns':>6} {'median ms/turn':>15} {'last-10% median':>16} {'peak MiB':>9}")
    medians: dict[int, float] = {}
    for turns in SIZES:
        samples: list[float] = []
        tails: list[float] = []
        for _ in range(args.repeat):
            overheads = asyncio.run(run_once(turns))
            samples.extend(overheads)
            tails.extend(overheads[-max(1, turns // 10) :])
        medians[turns] = statistics.median(samples) * 1000
        tail = statistics.median(tails) * 1000
        peak = peak_memory(turns) / 2**20
        print(f"{turns:>6} {medians[turns]:>15.3f} {tail:>16.3f} {peak:>9.1f}")
    growth = medians[SIZES[-1]] / medians[SIZES[0]]
    size_ratio = SIZES[-1] / SIZES[0]
    print(
        f"growth of the median from {SIZES[0]} to {SIZES[-1]} turns: {growth:.2f}x "
        f"(transcript {size_ratio:.0f}x longer; linear growth would be at most {size_ratio:.0f}x)"
    )


if __name__ == "__main__":
    main()
