"""The server half every scripted model fake shares: a queue of replies, the
requests recorded, a thread serving one catch-all route, and the waits a
streamed reply makes (a stall, a dropped connection).

A fake subclasses `ScriptedServer`, names itself, and answers each request in
`_respond`; its dialect (validation, events, error bodies) stays in its file.
"""

from __future__ import annotations

import abc
import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from tests.fakes.threaded import Served
from tests.fakes.watched import Hangups

__all__ = ["Disconnect", "RawStream", "RecordedRequest", "ScriptedServer"]

ItemT = TypeVar("ItemT")

# How long a dropped connection waits to see its client notice.
_HANGUP_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Disconnect:
    """A scripted reply: close the connection before sending any response headers."""


@dataclass(frozen=True, slots=True)
class RawStream:
    """A scripted reply: a 200 event stream of exactly `body`, for streams no
    real API would send (data that is not JSON, events of the wrong shape)."""

    body: str


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received. `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes = b""


class ScriptedServer(Served, abc.ABC, Generic[ItemT]):
    """Served on 127.0.0.1 in a background thread; a context manager.

    Each request the fake accepts takes the oldest scripted item (`_next`);
    every request, refused or not, is appended to `requests`.
    """

    # Names the fake's thread.
    _thread_name: ClassVar[str]
    _methods: ClassVar[Sequence[str]] = ("GET", "POST")

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        # Responses whose connection closed before they ended: a client hanging
        # up (a cancelled stream) or a scripted drop.
        self.hangups = Hangups()
        self._script: deque[ItemT] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        routes = [Route("/{path:path}", self._endpoint, methods=list(self._methods))]
        self._serve(Starlette(routes=routes), self._thread_name)

    # -- scripting and inspection --

    def script(self, *replies: ItemT) -> None:
        """Queue replies; each request takes the oldest one."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # -- lifecycle --

    def start(self, timeout: float = 10.0) -> None:
        """Serve on an OS-chosen port; return once connections are accepted."""
        self._stopping.clear()
        super().start(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving; stalled replies end at once."""
        self._stopping.set()
        super().stop(timeout)

    # -- what a subclass answers with --

    def _next(self) -> ItemT | None:
        """The oldest scripted item, taken off the script; None when it is empty."""
        with self._lock:
            return self._script.popleft() if self._script else None

    @abc.abstractmethod
    def _respond(self, request: Request, raw: bytes, body: Any) -> Response:
        """The answer to one recorded request; `body` is None unless `raw` is JSON."""

    async def _endpoint(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = dict(request.headers)
        self.requests.append(RecordedRequest(request.method, request.url.path, headers, body, raw))
        return self._respond(request, raw, body)

    # -- the waits of a streamed reply --

    async def pause(self, seconds: float, gone: anyio.Event) -> None:
        """Wait `seconds`, ending early once the client is gone or the server stops."""
        deadline = anyio.current_time() + seconds
        while not gone.is_set() and not self.stopping:
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                return
            # Polls, since `stopping` is a thread event anyio cannot await.
            with anyio.move_on_after(min(remaining, 0.02)):
                await gone.wait()

    async def hang_up(self, scope: Scope, gone: anyio.Event) -> None:
        """Close the connection serving `scope`, and wait for its client to notice.

        ASGI has no way to drop a connection, so this closes the uvicorn
        transport; close() still flushes what was already written.
        """
        client = scope["client"]
        for connection in self._serving.connections:
            if client is not None and getattr(connection, "client", None) == tuple(client):
                connection.transport.close()
        with anyio.move_on_after(_HANGUP_SECONDS):
            await gone.wait()
