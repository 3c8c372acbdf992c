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
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType

from mcp import Client
from mcp.server.mcpserver import MCPServer

from runner.errors import ConfigError
from runner.mcp.connect import Refused, Where, open_builtin, open_server, secrets_of
from runner.mcp.link import Failed, ServerLink
from runner.mcp.servers import ALL_TOOLS, BUILTIN_GITHUB, CALL_TIMEOUT, McpSettings
from runner.mcp.tool import LeftOut, McpTool, offered
from runner.tools.base import Tool

__all__ = ["Gateway", "McpReport", "McpRequired", "McpSkipped", "Served", "Skipped"]

# Neo's own server answers at once; this only bounds a bug.
_BUILTIN_STARTUP = 10.0


@dataclass(frozen=True, slots=True)
class Skipped:
    """A server the run goes without, and why."""

    server: str
    reason: str


@dataclass(frozen=True, slots=True)
class Served:
    """A server that started: the tools the agent got of it, and those left out."""

    server: str
    tools: tuple[str, ...]
    left_out: tuple[LeftOut, ...] = ()


@dataclass(frozen=True, slots=True)
class McpSkipped:
    """Published when the servers are up: those left out (the progress comment says so)."""

    skipped: tuple[Skipped, ...]


@dataclass(frozen=True, slots=True)
class McpReport:
    """What a run's gateway did: servers left out, tools called and how often."""

    skipped: tuple[Skipped, ...] = ()
    calls: tuple[tuple[str, int], ...] = ()


class McpRequired(ConfigError):
    """A server the configuration requires did not start: the run fails, in one line."""


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
        await asyncio.gather(*(entry.link.close() for entry in self._entries))

    async def ready(self) -> tuple[Tool, ...]:
        """The allowed tools of every server that started; raises McpRequired when a
        required one did not. Waits at most the longest startup_timeout."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._start())
        return await asyncio.shield(self._ready)

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
        for entry, found in zip(self._entries, listed, strict=True):
            name = entry.link.name
            if isinstance(found, BaseException):
                reason = str(found) if isinstance(found, Failed) else type(found).__name__
                if entry.required:
                    raise McpRequired(
                        f"MCP server {name!r} is required and did not start: {reason}"
                    )
                skipped.append(Skipped(name, reason))
                continue
            kept, left = offered(name, entry.allowed, found)
            tools.extend(McpTool(entry.link, tool, self._calls) for tool in kept)
            served.append(Served(name, tuple(tool.name for tool in kept), tuple(left)))
        self.served, self.skipped = tuple(served), tuple(skipped)
        return tuple(tools)


def _open_builtin(server: MCPServer, stderr: bytearray) -> AbstractAsyncContextManager[Client]:
    return open_builtin(server)  # in this process: nothing to say on a stderr
