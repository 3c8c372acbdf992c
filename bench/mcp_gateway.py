"""What the MCP gateway costs a job: its start-up with 0, 1 and 3 servers, and one call's
round trip against the same function as a built-in tool.

Two servers, both operator-allowed commands speaking stdio:

- `mcp-server-time`, the reference server (a dev dependency), built on the
  Python SDK like most servers a repository names;
- `bench/servers/minimal_mcp.py`, on the standard library alone: its start
  is the interpreter's, so the gateway's own cost shows.

Start-up is from opening the gateway to its tools being ready (each server
spawned, the 2026 discovery probe answered or refused, the handshake, the
tools listed); 3 servers are three of one kind, started at once as a job
starts them. "Own start" is the server alone: spawned, and its answer to
`initialize` read, with no client of ours. The call: `time__get_current_time`
through the gateway (the tool call, JSON-RPC over the server's pipes, the
answer quoted) against a built-in tool running the same function of
`mcp_server_time` in this process.

With `--sandbox IMAGE`, what the gateway adds to a job's start as a job
opens it: beside a docker sandbox (no network) on a scratch tree, the time
from the sandbox being ready to the gateway being ready (0 when the servers
were up first). Prints medians and quartiles.

    uv run python -m bench.mcp_gateway [--runs 10] [--calls 200] [--sandbox neo-sandbox:local]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from mcp_server_time.server import TimeServer  # type: ignore[import-untyped]

from runner.llm.types import JSONObject, ToolSpec
from runner.mcp import Command, McpSettings, Operator, ServerSpec
from runner.mcp.connect import Where
from runner.mcp.gateway import Gateway
from runner.network import NetworkPolicy
from runner.tools.base import Tool, ToolContext, ToolOutput

TIMEZONE = "Asia/Tokyo"
BIN = os.path.dirname(sys.executable)
MINIMAL = (sys.executable, str(Path(__file__).parent / "servers" / "minimal_mcp.py"))
TIME = ("mcp-server-time",)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


class BuiltinTime:
    """`get_current_time` as a built-in tool: the same function, in process."""

    spec = ToolSpec(
        "get_current_time",
        "The current time in a timezone.",
        {"type": "object", "properties": {"timezone": {"type": "string"}}},
    )

    def __init__(self) -> None:
        self._server = TimeServer()

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        result = self._server.get_current_time(str(args["timezone"]))
        return ToolOutput(result.model_dump_json(indent=2))


def _settings(argv: tuple[str, ...], servers: int) -> McpSettings:
    specs = tuple(ServerSpec(f"s{n}", Command(argv), ("*",)) for n in range(servers))
    return McpSettings(servers=specs, github=False)


def _where() -> Where:
    if shutil.which("mcp-server-time", path=BIN) is None:
        sys.exit("bench.mcp_gateway: mcp-server-time is missing (uv sync installs it)")
    operator = Operator(commands=("mcp-server-time", sys.executable), path=BIN)
    return Where(operator, NetworkPolicy(), job_id="bench-mcp")


async def _start_up(argv: tuple[str, ...], servers: int, runs: int) -> list[float]:
    starts: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        async with Gateway(_settings(argv, servers), _where()) as gateway:
            tools = await gateway.ready()
            starts.append(time.perf_counter() - began)
            assert len(tools) >= servers, gateway.skipped
            gateway.close_soon()
    return starts


def _own_start(argv: tuple[str, ...], runs: int) -> list[float]:
    """A server alone: spawned, its answer to `initialize` read."""
    line = (json.dumps(INITIALIZE) + "\n").encode()
    times: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        program = shutil.which(argv[0], path=BIN) or argv[0]
        with subprocess.Popen(
            [program, *argv[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(line)
            process.stdin.flush()
            process.stdout.readline()
            times.append(time.perf_counter() - began)
            process.stdin.close()
            process.wait(timeout=30)
    return times


async def _calls(tool: Tool, calls: int) -> list[float]:
    ctx = ToolContext("bench", lambda _: None)
    args: JSONObject = {"timezone": TIMEZONE}
    for _ in range(10):  # warm up
        await tool(args, ctx)
    times: list[float] = []
    for _ in range(calls):
        began = time.perf_counter()
        await tool(args, ctx)
        times.append(time.perf_counter() - began)
    return times


async def _beside_sandbox(
    image: str, argv: tuple[str, ...], runs: int
) -> tuple[list[float], list[float]]:
    """(the sandbox's start, what the gateway added after it), per run."""
    from runner.sandbox.docker import DockerSandbox, docker_client

    client = docker_client()
    boxes: list[float] = []
    added: list[float] = []
    with tempfile.TemporaryDirectory(prefix="neo-bench-mcp-") as tree:
        for run in range(runs):
            began = time.perf_counter()
            async with (
                Gateway(_settings(argv, 1), _where()) as gateway,
                DockerSandbox.start(
                    Path(tree), image=image, job_id=f"bench-mcp-{run}", client=client
                ),
            ):
                boxed = time.perf_counter()
                await gateway.ready()
                ready = time.perf_counter()
                gateway.close_soon()
            boxes.append(boxed - began)
            added.append(ready - boxed)
    client.close()
    return boxes, added


def _ms(values: Sequence[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    median = statistics.median(values) * 1000
    return f"median {median:8.1f} ms  (q1 {q[0] * 1000:.1f}, q3 {q[2] * 1000:.1f})"


async def main(runs: int, calls: int, sandbox: str | None) -> None:
    print(f"gateway start-up, {runs} runs each:")
    print(f"  0 servers              : {_ms(await _start_up(TIME, 0, runs))}")
    for label, argv in (("mcp-server-time", TIME), ("minimal (stdlib)", MINIMAL)):
        print(f"  {label:16} own start: {_ms(_own_start(argv, runs))}")
        for servers in (1, 3):
            noun = "servers" if servers != 1 else "server "
            print(f"  {label:16} {servers} {noun}: {_ms(await _start_up(argv, servers, runs))}")
    gateway = Gateway(_settings(TIME, 1), _where())
    async with gateway:
        (through,) = [t for t in await gateway.ready() if t.spec.name == "s0__get_current_time"]
        mcp_times = await _calls(through, calls)
    builtin = await _calls(BuiltinTime(), calls)
    print(f"one call, {calls} calls each:")
    print(f"  built-in tool : {_ms(builtin)}")
    print(f"  MCP, gateway  : {_ms(mcp_times)}")
    overhead = statistics.median(mcp_times) - statistics.median(builtin)
    print(f"  overhead      : {overhead * 1000:.2f} ms per call (median against median)")
    if sandbox is not None:
        print(f"beside a docker sandbox ({sandbox}), one server, {runs} runs each:")
        for label, argv in (("mcp-server-time", TIME), ("minimal (stdlib)", MINIMAL)):
            boxes, added = await _beside_sandbox(sandbox, argv, runs)
            print(f"  {label:16}: sandbox {_ms(boxes)};  added {_ms(added)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sandbox", metavar="IMAGE", help="also beside a docker sandbox")
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.calls, options.sandbox))
