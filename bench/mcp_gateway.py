"""What the MCP gateway costs a job: its start-up with 0, 1 and 3 servers, and one call's
round trip against the same function as a built-in tool.

The server is the reference `mcp-server-time` (a dev dependency) as an
operator-allowed command, the kind a repository names most; 3 servers are
three of it, started at once as a job starts them. Start-up is from opening
the gateway to its tools being ready (each server spawned, its protocol
negotiated, its tools listed); a job overlaps it with the sandbox's start,
so what it adds to a job is at most this. Close is the gateway's end.

The call: `time__get_current_time` through the gateway (the loop's tool
call, JSON-RPC over the server's stdin and stdout, the answer quoted) against
a built-in tool running the same function of `mcp_server_time` in process.
Prints medians and quartiles.

    uv run python -m bench.mcp_gateway [--runs 10] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence

from mcp_server_time.server import TimeServer  # type: ignore[import-untyped]

from runner.llm.types import JSONObject, ToolSpec
from runner.mcp import Command, McpSettings, Operator, ServerSpec
from runner.mcp.connect import Where
from runner.mcp.gateway import Gateway
from runner.network import NetworkPolicy
from runner.tools.base import Tool, ToolContext, ToolOutput

TIMEZONE = "Asia/Tokyo"


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


def _settings(servers: int) -> McpSettings:
    specs = tuple(
        ServerSpec(f"time{n}" if n else "time", Command(("mcp-server-time",)), ("*",))
        for n in range(servers)
    )
    return McpSettings(servers=specs, github=False)


def _where() -> Where:
    found = shutil.which("mcp-server-time", path=os.path.dirname(sys.executable))
    if found is None:
        sys.exit("bench.mcp_gateway: mcp-server-time is missing (uv sync installs it)")
    operator = Operator(commands=("mcp-server-time",), path=os.path.dirname(found))
    return Where(operator, NetworkPolicy(), job_id="bench-mcp")


async def _start_up(servers: int, runs: int) -> tuple[list[float], list[float]]:
    starts: list[float] = []
    closes: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        gateway = Gateway(_settings(servers), _where())
        await gateway.__aenter__()
        tools = await gateway.ready()
        starts.append(time.perf_counter() - began)
        assert len(tools) == 2 * servers, gateway.skipped
        began = time.perf_counter()
        await gateway.__aexit__(None, None, None)
        closes.append(time.perf_counter() - began)
    return starts, closes


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


def _ms(values: Sequence[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    median = statistics.median(values) * 1000
    return f"median {median:8.2f} ms  (q1 {q[0] * 1000:.2f}, q3 {q[2] * 1000:.2f})"


async def main(runs: int, calls: int) -> None:
    print(f"gateway start-up, {runs} runs each (mcp-server-time as a command):")
    for servers in (0, 1, 3):
        starts, closes = await _start_up(servers, runs)
        noun = "servers" if servers != 1 else "server "
        print(f"  {servers} {noun}: ready {_ms(starts)};  close {_ms(closes)}")
    gateway = Gateway(_settings(1), _where())
    async with gateway:
        (mcp_tool,) = [t for t in await gateway.ready() if t.spec.name == "time__get_current_time"]
        through = await _calls(mcp_tool, calls)
    builtin = await _calls(BuiltinTime(), calls)
    print(f"one call, {calls} calls each:")
    print(f"  built-in tool : {_ms(builtin)}")
    print(f"  MCP, gateway  : {_ms(through)}")
    overhead = statistics.median(through) - statistics.median(builtin)
    print(f"  overhead      : {overhead * 1000:.2f} ms per call (median against median)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.calls))
