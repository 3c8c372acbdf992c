"""An ASGI response that knows when its client went away, for fakes that stream."""

from __future__ import annotations

import abc

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["WatchedResponse"]


class WatchedResponse(Response, abc.ABC):
    """Runs `_run` while a watcher sets `gone` once the client disconnects."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            await self._run(scope, send, gone)
            tasks.cancel_scope.cancel()

    @abc.abstractmethod
    async def _run(self, scope: Scope, send: Send, gone: anyio.Event) -> None:
        """Send the response; stop early once `gone` is set."""
