"""A scripted reply as bytes to send: a status, headers and body chunks, with a
stall, a cut or a drop where the script asks for one, and the ASGI response
that sends it on a `ScriptedServer`'s connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import Scope, Send

from tests.fakes.scripted_server import ScriptedServer
from tests.fakes.watched import WatchedResponse

__all__ = ["Plan", "PlannedResponse"]


@dataclass(frozen=True, slots=True)
class Plan:
    """`pause` seconds of silence before chunk `pause_after`; the connection
    closed before chunk `cut_after`; `drop`: closed before any header."""

    status: int
    headers: list[tuple[bytes, bytes]]
    chunks: list[bytes]
    pause_after: int | None = None
    pause: float = 0.0
    drop: bool = False
    cut_after: int | None = None


class PlannedResponse(WatchedResponse):
    """Sends a plan, stopping early once the client is gone or the server stops."""

    def __init__(self, plan: Plan, server: ScriptedServer[Any]) -> None:
        super().__init__()
        self._plan = plan
        self._server = server
        self.hangups = server.hangups

    async def _run(self, scope: Scope, send: Send, gone: anyio.Event) -> None:
        plan = self._plan
        if plan.drop:
            return await self._server.hang_up(scope, gone)
        await send({"type": "http.response.start", "status": plan.status, "headers": plan.headers})
        for n, chunk in enumerate(plan.chunks):
            if n == plan.cut_after:
                return await self._server.hang_up(scope, gone)
            if n == plan.pause_after:
                await self._server.pause(plan.pause, gone)
            if gone.is_set() or self._server.stopping:
                return None
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return None
