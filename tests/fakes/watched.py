"""An ASGI response that knows when its client went away, for fakes that stream."""

from __future__ import annotations

import abc
import threading

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["Hangups", "WatchedResponse"]


class Hangups:
    """How many responses lost their client before they ended; thread-safe,
    since the fake serves from its own thread while the test reads."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def add(self) -> None:
        with self._lock:
            self._count += 1


class WatchedResponse(Response, abc.ABC):
    """Runs `_run` while a watcher sets `gone` once the client disconnects.

    A disconnect seen before `_run` returns is counted in `hangups`, if given.
    """

    hangups: Hangups | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            if self.hangups is not None:
                self.hangups.add()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            await self._run(scope, send, gone)
            tasks.cancel_scope.cancel()

    @abc.abstractmethod
    async def _run(self, scope: Scope, send: Send, gone: anyio.Event) -> None:
        """Send the response; stop early once `gone` is set."""
