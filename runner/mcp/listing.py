"""What `neo mcp list` shows: the servers a run would get, started as a job starts them,
each tool kept, and why a server or a tool was left out.

The built-in `github` server is listed by its tools; outside a job it reads
nothing (its reads need the job's token).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from runner.llm.types import JSON
from runner.mcp.reads import GitHubReadError, LogView, ThreadView
from runner.mcp.report import McpRequired
from runner.mcp.run import McpRun, open_gateway
from runner.mcp.servers import BUILTIN_GITHUB
from runner.network.policy import NetworkPolicy
from runner.text import one_line

__all__ = ["Listed", "list_servers", "listing_json", "listing_text"]


@dataclass(frozen=True, slots=True)
class Listed:
    """One server: where it runs, and its tools kept and left out; or why it did not start."""

    server: str
    source: str
    tools: tuple[str, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()
    reason: str | None = None
    required: bool = False


class _JobsOnly:
    """The built-in server's reads outside a job: none."""

    def __init__(self, repository: str) -> None:
        self.repository = repository

    async def thread(self, number: int) -> ThreadView:
        raise GitHubReadError("only a job reads GitHub")

    async def diff(self, number: int) -> str:
        raise GitHubReadError("only a job reads GitHub")

    async def check_log(self, check_run_id: int) -> LogView:
        raise GitHubReadError("only a job reads GitHub")


async def list_servers(mcp: McpRun, policy: NetworkPolicy, *, repository: str) -> list[Listed]:
    """Start `mcp`'s servers (and the built-in one) as a job would, and list them."""
    mcp = McpRun(mcp.settings, mcp.operator, _JobsOnly(repository))
    async with open_gateway(mcp, policy, job_id="mcp-list") as gateway:
        if gateway is None:
            return []
        # A required server that did not start is listed as left out, and required.
        with contextlib.suppress(McpRequired):
            await gateway.ready()
        served = {s.server: s for s in gateway.served}
        skipped = {s.server: s.reason for s in gateway.skipped}
    specs = {spec.name: spec for spec in mcp.settings.servers}
    listed: list[Listed] = []
    for name in (*specs, BUILTIN_GITHUB):
        spec = specs.get(name)
        source = str(spec.source) if spec is not None else "built in, read-only, this repository"
        required = spec is not None and spec.required
        if name in served:
            found = served[name]
            left = tuple((left.tool, left.reason) for left in found.left_out)
            listed.append(Listed(name, source, found.tools, left, required=required))
        elif name in skipped:
            listed.append(Listed(name, source, reason=skipped[name], required=required))
    return listed


def listing_text(listed: list[Listed]) -> str:
    """The listing for a terminal: a paragraph per server."""
    if not listed:
        return "No MCP server: `mcp: {github: false}` and no `servers`."
    blocks: list[str] = []
    for entry in listed:
        head = f"{entry.server}  ({one_line(entry.source, 120)})"
        if entry.required:
            head += "  required"
        lines = [head]
        if entry.reason is not None:
            fails = "the job fails" if entry.required else "a job goes without it"
            lines.append(f"  left out ({fails}): {one_line(entry.reason, 300)}")
        lines.extend(f"  + {entry.server}__{tool}" for tool in entry.tools)
        lines.extend(f"  - {tool}: {reason}" for tool, reason in entry.left_out)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def listing_json(listed: list[Listed]) -> JSON:
    return {
        "servers": [
            {
                "server": entry.server,
                "source": entry.source,
                "required": entry.required,
                "started": entry.reason is None,
                "reason": entry.reason,
                "tools": [f"{entry.server}__{tool}" for tool in entry.tools],
                "left_out": [{"tool": tool, "reason": why} for tool, why in entry.left_out],
            }
            for entry in listed
        ]
    }
