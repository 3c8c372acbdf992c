"""The gateway: a run's MCP servers, started on the host side, as tools for the agent.

    async with Gateway(settings, where, github=server) as gateway:   # servers start
        ...                                                          # the sandbox starts
        tools = await gateway.ready()    # each listed within its startup_timeout
        ...                              # the run; gateway.report() after it

Every server starts at once, in the background, so their start-up overlaps
the sandbox's. A server that does not start is skipped with its reason; a
required one fails the run (`McpRequired`). The tools are fixed once
`ready` returns: a server cannot add one, or change one, during the run.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from runner.agent.events import ToolNotice
from runner.mcp.connect import Refused, Where, open_builtin, open_server, secrets_of
from runner.mcp.link import Failed, ServerLink
from runner.mcp.report import McpReport, McpRequired, McpSkipped, Skipped
from runner.mcp.servers import ALL_TOOLS, BUILTIN_GITHUB, CALL_TIMEOUT, McpSettings
from runner.mcp.tool import LeftOut, McpTool, offered
from runner.tools.base import Tool

__all__ = [
    "NOTICE",
    "Gateway",
    "McpReport",
    "McpRequired",
    "McpSkipped",
    "Served",
    "Skipped",
]

# The name of the notice the gateway publishes (a ToolNotice's tool).
NOTICE = "mcp"
# Neo's own server answers at once; this only bounds a bug.
_BUILTIN_STARTUP = 10.0


@dataclass(frozen=True, slots=True)
class Served:
    """A server that started: the tools the agent got of it, and those left out."""

    server: str
    tools: tuple[str, ...]
    left_out: tuple[LeftOut, ...] = ()


@dataclass(frozen=True, slots=True)
class _Entry:
    link: ServerLink
    allowed: tuple[str, ...]
    required: bool


class Gateway:
    """A run's MCP servers, from their start to their end."""

    def __init__(
        self, settings: McpSettings, where: Where, *, github: MCPServer | None = None
    ) -> None:
        self._entries: list[_Entry] = []
        for spec in settings.servers:
            try:
                secrets = secrets_of(spec, where.operator)
            except Refused:
                secrets = {}  # the server's start says why
            opener = functools.partial(open_server, spec, where)
            link = ServerLink(
                spec.name,
                opener,
                startup_timeout=spec.startup_timeout,
                call_timeout=spec.call_timeout,
                secrets=secrets,
            )
            self._entries.append(_Entry(link, spec.tools, spec.required))
        if settings.github and github is not None:
            builtin = ServerLink(
                BUILTIN_GITHUB,
                functools.partial(_open_builtin, github),
                startup_timeout=_BUILTIN_STARTUP,
                call_timeout=CALL_TIMEOUT,
            )
            self._entries.append(_Entry(builtin, (ALL_TOOLS,), required=False))
        self._calls: Counter[str] = Counter()
        self._ready: asyncio.Future[tuple[Tool, ...]] | None = None
        self._closing: asyncio.Future[None] | None = None
        self.served: tuple[Served, ...] = ()
        self.skipped: tuple[Skipped, ...] = ()

    async def __aenter__(self) -> Gateway:
        for entry in self._entries:
            entry.link.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close_soon()
        closing = self._closing
        assert closing is not None
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            # Cancelled while the servers end: let them finish (bounded, see
            # ServerLink.close) rather than leave their tasks to the loop's last
            # cancel, which would break into the SDK's shielded shutdown.
            await asyncio.wait({closing})
            raise

    def close_soon(self) -> None:
        """Start stopping the servers (each stops in a second or two), so that whatever
        the caller ends next (the sandbox) ends meanwhile; leaving the block waits for it."""
        if self._closing is None:
            links = [entry.link.close() for entry in self._entries]
            self._closing = asyncio.ensure_future(_all(links))

    def left_running(self) -> list[asyncio.Task[None]]:
        """The servers' tasks that have not ended: none once the block has been left,
        unless one would not end when cancelled (then logged)."""
        return [task for entry in self._entries if (task := entry.link.running) is not None]

    async def ready(self) -> tuple[Tool, ...]:
        """The allowed tools of every server that started; raises McpRequired when a
        required one did not. Waits at most the longest startup_timeout."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._start())
        return await asyncio.shield(self._ready)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools `ready` gave; none before it did."""
        ready = self._ready
        if ready is None or not ready.done() or ready.cancelled() or ready.exception():
            return ()
        return ready.result()

    def notice(self) -> ToolNotice | None:
        """The event that says which servers were left out, once `ready` returned."""
        if not self.skipped:
            return None
        return ToolNotice("", NOTICE, McpSkipped(self.skipped))

    def report(self) -> McpReport:
        calls = tuple(sorted(self._calls.items(), key=lambda item: (-item[1], item[0])))
        return McpReport(self.skipped, calls)

    async def _start(self) -> tuple[Tool, ...]:
        listed = await asyncio.gather(
            *(entry.link.tools() for entry in self._entries), return_exceptions=True
        )
        tools: list[Tool] = []
        served: list[Served] = []
        skipped: list[Skipped] = []
        missing: list[Skipped] = []  # required, and not started
        for entry, found in zip(self._entries, listed, strict=True):
            name = entry.link.name
            if isinstance(found, BaseException):
                reason = str(found) if isinstance(found, Failed) else type(found).__name__
                skipped.append(Skipped(name, reason))
                if entry.required:
                    missing.append(skipped[-1])
                continue
            kept, left = offered(name, entry.allowed, found)
            tools.extend(McpTool(entry.link, tool, self._calls) for tool in kept)
            served.append(Served(name, tuple(tool.name for tool in kept), tuple(left)))
        # Known whole before a required server's failure is raised: `neo mcp list` shows it.
        self.served, self.skipped = tuple(served), tuple(skipped)
        if missing:
            first = missing[0]
            raise McpRequired(
                f"MCP server {first.server!r} is required and did not start: {first.reason}"
            )
        return tuple(tools)


async def _all(closing: list[Coroutine[Any, Any, None]]) -> None:
    await asyncio.gather(*closing)


def _open_builtin(server: MCPServer, stderr: bytearray) -> AbstractAsyncContextManager[Client]:
    return open_builtin(server)  # in this process: nothing to say on a stderr
