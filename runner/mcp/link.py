"""One server for the length of a run: started in a task of its own, which holds its
session (the SDK's contexts are entered and left in one task), listed once, called
from the loop's tasks, closed with the gateway.

The task is stopped through an anyio cancel scope, never first by
`Task.cancel()`: the SDK ends a session in shielded scopes (closing the
server's stdin, waiting, killing it, draining its stdout), which anyio's
cancellation respects and a native one breaks into. A native cancel landing
there left the server running and its stdout reader draining forever, and
the task, waiting in a task group that shields itself from further
cancellation, could never end: asyncio.run's exit hung on it. Native
cancels remain the last resort, repeated, and a task that outlives them is
logged with its stack, not left behind silently.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.shared.exceptions import MCPError

from runner.mcp.connect import Refused
from runner.mcp.container import ContainerFailed
from runner.mcp.content import redacted
from runner.mcp.operator import NotAllowed
from runner.text import one_line
from runner.tools.base import ToolError

__all__ = ["MAX_TOOLS", "Failed", "ServerLink"]

# Tools one server may list; a paginator that never ends cannot hang the start.
MAX_TOOLS = 500
_MAX_PAGES = 50
# Beyond a call's own timeout, for the write to a server that reads nothing.
_CALL_SLACK = 5.0
# For a server to end on its own once asked to (the SDK's stdio shutdown takes
# at most about 7 s: a flush, stdin's end, SIGTERM, SIGKILL, each waited for).
CLOSE_TIMEOUT = 10.0
# For the task to end after each cancellation, and how many native ones it gets.
_CANCEL_WAIT = 5.0
_NATIVE_CANCELS = 3

log = logging.getLogger("neo.mcp")

Opener = Callable[[bytearray], AbstractAsyncContextManager[Client]]


class Failed(Exception):
    """The server did not start, or stopped; the message says why, in one line."""


class ServerLink:
    """A started server: its tools, its calls, its end."""

    def __init__(
        self,
        name: str,
        opener: Opener,
        *,
        startup_timeout: float,
        call_timeout: float,
        secrets: Mapping[str, str] | None = None,
        close_timeout: float = CLOSE_TIMEOUT,
    ) -> None:
        self.name = name
        self._opener = opener
        self._startup_timeout = startup_timeout
        self._close_timeout = close_timeout
        self.call_timeout = call_timeout
        self.secrets = dict(secrets or {})
        self._stderr = bytearray()
        self._closing = asyncio.Event()
        self._listed: asyncio.Future[list[mcp_types.Tool]] | None = None
        self._task: asyncio.Task[None] | None = None
        # Cancelled to stop the task: it may be, before the task enters it.
        self._scope = anyio.CancelScope()
        self._client: Client | None = None
        self._gone: str | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._listed = loop.create_future()
        self._task = asyncio.create_task(self._serve(), name=f"mcp-{self.name}")

    async def tools(self) -> list[mcp_types.Tool]:
        """What the server lists, once it started within its timeout; else Failed."""
        assert self._listed is not None
        assert self._task is not None
        try:
            async with asyncio.timeout(self._startup_timeout):
                return await asyncio.shield(self._listed)
        except TimeoutError:
            self._listed.cancel()  # what the task may set later, nobody reads
            # It ends in the background (the SDK may take seconds to stop a server
            # that will not), so the run goes on; `close` waits for that end.
            self._scope.cancel()
            raise Failed(self._why(f"it did not start within {self._startup_timeout:g}s")) from None
        except Exception as error:
            raise Failed(self._why(_reason(error))) from None

    async def call(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool`; a failure the model should read is a ToolError."""
        client = self._client
        if client is None or self._gone is not None:
            raise ToolError(f"MCP server {self.name!r} has stopped: {self._gone or 'not started'}")
        try:
            async with asyncio.timeout(self.call_timeout + _CALL_SLACK):
                return await client.call_tool(tool, args, read_timeout_seconds=self.call_timeout)
        except (TimeoutError, MCPError) as error:
            if isinstance(error, TimeoutError) or "timed out" in str(error).lower():
                raise ToolError(
                    f"MCP server {self.name!r} did not answer {tool} within"
                    f" {self.call_timeout:g}s (its call_timeout); the call was cancelled"
                ) from None
            raise ToolError(self._shown(f"MCP server {self.name!r}: {error}")) from None
        except Exception as error:
            raise ToolError(self._shown(f"MCP server {self.name!r}: {_reason(error)}")) from None

    async def close(self) -> None:
        """Ask the server to end, then make it (`_stop`); bounded."""
        self._closing.set()
        await self._stop(grace=self._close_timeout)

    @property
    def running(self) -> asyncio.Task[None] | None:
        """The server's task while it has not ended (after `close`: one that would not)."""
        task = self._task
        return task if task is not None and not task.done() else None

    async def _stop(self, *, grace: float) -> None:
        """End the task: on its own within `grace`, else by cancelling its scope (the
        SDK's shielded exits run to their bounded end), else by cancelling the task
        itself, a few times (a task may swallow one). What outlives all is logged."""
        task = self._task
        if task is None:
            return
        # asyncio.wait: the task's own end raises nothing here, and a cancel of
        # the caller still reaches the caller.
        if grace > 0:
            await asyncio.wait({task}, timeout=grace)
        if not task.done():
            self._scope.cancel()
            await asyncio.wait({task}, timeout=_CANCEL_WAIT)
        for _ in range(_NATIVE_CANCELS):
            if task.done():
                return
            task.cancel()
            await asyncio.wait({task}, timeout=_CANCEL_WAIT)
        if not task.done():
            stack = io.StringIO()
            task.print_stack(file=stack)
            log.error(
                "MCP server %r: its task did not end when cancelled %d times; left running:\n%s",
                self.name,
                _NATIVE_CANCELS + 1,
                stack.getvalue(),
            )

    async def _serve(self) -> None:
        assert self._listed is not None
        try:
            with self._scope:
                async with self._opener(self._stderr) as client:
                    listed = await _listed(client)
                    self._client = client
                    if not self._listed.done():
                        self._listed.set_result(listed)
                    await self._closing.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            reason = _reason(error)
            if not self._listed.done():
                self._listed.set_exception(Failed(reason))
            elif not self._closing.is_set():
                self._gone = self._why(reason)
        finally:
            self._client = None
            if self._gone is None and not self._closing.is_set():
                self._gone = self._why("it stopped")

    def _why(self, reason: str) -> str:
        last = _last_line(self._stderr)
        if last and last not in reason:
            reason = f"{reason} (it said: {last})"
        return self._shown(reason)

    def _shown(self, text: str) -> str:
        return one_line(redacted(text, self.secrets), 300)


async def _listed(client: Client) -> list[mcp_types.Tool]:
    found: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        found.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or len(found) >= MAX_TOOLS:
            break
    return found[:MAX_TOOLS]


def _reason(error: BaseException) -> str:
    """Why a server failed, in words, from what was raised (a task group's first error)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, Failed | Refused | NotAllowed | ContainerFailed):
        return str(error)
    if isinstance(error, FileNotFoundError | PermissionError):
        return f"cannot run it: {error.strerror}"
    if isinstance(error, MCPError):
        return f"it answered an error: {error}"
    if isinstance(error, httpx2.HTTPStatusError):
        return f"it answered HTTP {error.response.status_code}"
    if isinstance(error, httpx2.TransportError | OSError):
        return f"cannot reach it: {error or type(error).__name__}"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _last_line(data: bytearray) -> str:
    lines = bytes(data).decode("utf-8", "replace").strip().splitlines()
    return next((line.strip() for line in reversed(lines) if line.strip()), "")
