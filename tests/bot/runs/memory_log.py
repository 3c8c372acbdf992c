"""TEMPORARY until h28a's queue run logs land: a queue with its run logs in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tests.bot.runs.records import Rec


class MemoryLog:
    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.logs: dict[int, list[Rec]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        log = self.logs.setdefault(job_id, [])
        for at, kind, data in events:
            log.append(Rec(len(log) + 1, kind, data, at, job_id))
        return len(log)

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> list[Rec]:
        return self.logs.get(job_id, [])[after : after + limit]

    async def wait_events(self, job_id: int, after: int, timeout: float) -> list[Rec]:
        async with asyncio.timeout(None) as _:
            deadline = asyncio.get_running_loop().time() + timeout
            while asyncio.get_running_loop().time() < deadline:
                if found := await self.events_after(job_id, after):
                    return found
                await asyncio.sleep(0.02)
        return []
