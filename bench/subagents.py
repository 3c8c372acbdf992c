"""What inspect subagents save the parent's conversation, and what parallel children save in time.

A scripted task explores 40 files (about 3 KB each) in a local sandbox and
reports one fact per file. Alone, the parent reads every file itself; with
subagents it hands four children ten files each, in one response. Printed:
the tokens in the parent's final transcript and all the prompt tokens it sent
(target: at least 3x fewer with children), then the wall time of the run with
four children at once against one at a time, every provider call taking a
fixed simulated latency.

    uv run python -m bench.subagents [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.agent import Agent
from runner.compact.tokens import estimate_messages, estimate_prompt
from runner.llm.provider import Completed, StreamEvent
from runner.llm.types import (
    END_TURN,
    TOOL_USE,
    Request,
    Response,
    Text,
    ToolResult,
    ToolUse,
    Usage,
)
from runner.sandbox import LocalSandbox
from runner.subagent import AgentTool, SubagentSettings, Supervisor
from runner.tools.base import Tool
from runner.tools.read_file import ReadFileTool

FILES = 40
CHILDREN = 4
READS_PER_CALL = 2


def make_tree(root: Path) -> list[str]:
    """40 modules of 80 lines, each defining one handler at a line of its own."""
    paths = []
    for n in range(FILES):
        lines = [f"# module {n}: helpers for part {n} of the service"]
        lines += [f"VALUE_{n}_{i} = {i} * {n} + {i * 7 % 13}  # a setting" for i in range(70)]
        lines += [f"def handler_{n}(request):", f"    return VALUE_{n}_1 + len(request)"]
        lines += [f"# end of module {n}"] * 7
        path = f"src/module_{n:02d}.py"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def _facts(request: Request) -> list[str]:
    """One fact per file read so far in this conversation: where its handler is."""
    facts = []
    for message in request.messages:
        for block in message.content:
            if isinstance(block, ToolResult):
                for line in block.text.splitlines():
                    if "def handler_" in line:
                        number, _, code = line.partition("\t")
                        name = code.split("(")[0].removeprefix("def ")
                        facts.append(f"{name} at line {number.strip()}")
    return facts


class Scripted:
    """Plays the parent and the children by the request's shape, each call `latency` long."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, paths: Sequence[str], latency: float) -> None:
        self._paths = list(paths)
        self._latency = latency
        self.parent_prompt_tokens = 0

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self._latency)
        tokens = estimate_prompt(request.messages, request.system, request.tools)
        names = {spec.name for spec in request.tools}
        child = request.system.text.startswith("You are an inspector")
        if not child:
            self.parent_prompt_tokens += tokens
        content = self._delegate(request) if "agent" in names else self._read(request, child)
        stop = TOOL_USE if any(isinstance(b, ToolUse) for b in content) else END_TURN
        yield Completed(Response(content, stop, Usage(tokens, 50)))

    def _delegate(self, request: Request) -> tuple[Text | ToolUse, ...]:
        if len(request.messages) > 1:
            return (Text("Every handler is listed in the subagents' reports."),)
        share = FILES // CHILDREN
        return tuple(
            ToolUse(
                f"agent_{c}",
                "agent",
                {
                    "description": f"handlers in files {c * share} to {(c + 1) * share - 1}",
                    "prompt": "Find the handler each of these files defines: "
                    + ", ".join(self._paths[c * share : (c + 1) * share]),
                },
            )
            for c in range(CHILDREN)
        )

    def _read(self, request: Request, child: bool) -> tuple[Text | ToolUse, ...]:
        todo = self._paths
        if child:
            asked = request.messages[0].text.rsplit(": ", 1)[-1]
            todo = asked.split(", ")
        done = sum(1 for m in request.messages for b in m.content if isinstance(b, ToolResult))
        if done >= len(todo):
            return (Text("; ".join(_facts(request))),)
        batch = todo[done : done + READS_PER_CALL]
        return tuple(
            ToolUse(f"read_{done + i}", "read_file", {"path": path}) for i, path in enumerate(batch)
        )


@dataclass(frozen=True, slots=True)
class Figures:
    transcript_tokens: int
    prompt_tokens: int
    # Every call's prompt, the children's included (the run's usage).
    run_tokens: int
    seconds: float
    answer: str


async def run(tree: Path, paths: Sequence[str], latency: float, parallel: int | None) -> Figures:
    """One run: the parent alone (`parallel` None), else with children `parallel` at once."""
    provider = Scripted(paths, latency)
    box = LocalSandbox(tree)
    if parallel is None:
        tools: list[Tool] = [ReadFileTool(box)]
    else:
        settings = SubagentSettings(max_parallel=parallel)
        tools = [AgentTool(Supervisor(settings, provider), box)]
    agent = Agent(provider, tools=tools, max_turns=100)
    started = time.perf_counter()
    turn = await agent.send("Where is each module's handler? Report file and line.")
    seconds = time.perf_counter() - started
    transcript = agent.transcript()
    if parallel is not None:
        found = sum(
            r.text.count("handler_")
            for m in transcript
            for r in m.content
            if isinstance(r, ToolResult)
        )
        assert found == FILES, f"the children found {found} of {FILES} handlers"
    return Figures(
        estimate_messages(transcript),
        provider.parent_prompt_tokens,
        agent.usage.input_tokens,
        seconds,
        turn.text,
    )


async def main(latency: float) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch)
        paths = make_tree(tree)
        alone = await run(tree, paths, latency, None)
        serial = await run(tree, paths, latency, 1)
        parallel = await run(tree, paths, latency, CHILDREN)
    print(f"{FILES} files explored, {latency * 1000:.0f} ms per simulated provider call")
    print()
    print("parent's conversation          alone    with children   ratio")
    rows = (
        ("final transcript tokens", alone.transcript_tokens, parallel.transcript_tokens, ""),
        ("prompt tokens sent", alone.prompt_tokens, parallel.prompt_tokens, ""),
        ("the run's prompt tokens", alone.run_tokens, parallel.run_tokens, "  (children too)"),
    )
    for label, without, with_children, note in rows:
        ratio = without / with_children
        print(f"  {label:<24} {without:>9,} {with_children:>15,}   {ratio:5.1f}x{note}")
    print()
    print(f"wall time, {CHILDREN} children one at a time: {serial.seconds:6.2f} s")
    print(f"wall time, {CHILDREN} children at once:       {parallel.seconds:6.2f} s")
    print(f"  speed-up: {serial.seconds / parallel.seconds:.1f}x")
    ratio = alone.transcript_tokens / parallel.transcript_tokens
    print()
    print(f"target (at least 3x fewer tokens in the parent): {'met' if ratio >= 3 else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per provider call")
    asyncio.run(main(parser.parse_args().latency))
