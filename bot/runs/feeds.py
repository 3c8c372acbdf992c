"""One reader of each watched job's log per server, whose watchers share what it reads.

A hundred people watching one run must not be a hundred readers of the
queue: on SQLite each waiting reader polls another process's appends, on
PostgreSQL each would hold a LISTEN. A job's feed waits for its records once,
keeps the latest ones, and wakes every watcher; a watcher further behind than
what the feed keeps reads the queue itself, once, to catch up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Protocol

from bot.runs.view import Record

log = logging.getLogger("neo.runs")

# Records a feed keeps for watchers that are a little behind.
KEPT = 2000
# Seconds a feed's reader waits in one call; it ends when it has no watcher left.
READ_WAIT = 5.0
# Seconds a feed's reader waits after the queue failed it.
RETRY = 1.0
# Records whose SSE message is kept to be sent to every watcher.
SHARED = 10_000


class RunLogReader(Protocol):
    async def events_after(
        self, job_id: int, after: int, *, limit: int = 1000
    ) -> Sequence[Record]: ...

    async def wait_events(self, job_id: int, after: int, timeout: float) -> Sequence[Record]: ...


class _Feed:
    def __init__(self, latest: int) -> None:
        self.latest = latest
        self.kept: deque[Record] = deque(maxlen=KEPT)
        self.changed = asyncio.Event()
        self.watchers = 0
        self.task: asyncio.Task[None] | None = None


class Feeds:
    """The feeds of one server's watched jobs."""

    def __init__(self, log: RunLogReader) -> None:
        self._log = log
        self._feeds: dict[int, _Feed] = {}
        self._shared: OrderedDict[tuple[int, int], bytes] = OrderedDict()

    def shared(self, record: Record, make: Callable[[Record], bytes]) -> bytes:
        """`make(record)`, made once for every watcher of the record's job (the last
        SHARED records); a `truncated` record, which the queue updates, each time."""
        if record.kind == "truncated":
            return make(record)
        key = (record.job_id, record.seq)
        made = self._shared.get(key)
        if made is None:
            made = self._shared[key] = make(record)
            if len(self._shared) > SHARED:
                self._shared.popitem(last=False)
        return made

    @property
    def readers(self) -> int:
        """Jobs read from the queue now (one reader each, however many watch)."""
        return len(self._feeds)

    async def wait(self, job_id: int, after: int, timeout: float) -> Sequence[Record]:
        """The job's records after `after`, as soon as any exist; [] after `timeout` seconds."""
        feed = self._feeds.get(job_id)
        if feed is None:
            feed = self._feeds[job_id] = _Feed(after)
            feed.task = asyncio.create_task(self._read(job_id, feed))
        feed.watchers += 1
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    while feed.latest <= after:
                        await feed.changed.wait()
            if feed.latest <= after:
                return []
            if feed.kept and feed.kept[0].seq <= after + 1:
                return [record for record in feed.kept if record.seq > after]
            # Further behind than the feed keeps: catch up from the queue.
            return await self._log.events_after(job_id, after)
        finally:
            feed.watchers -= 1

    async def _read(self, job_id: int, feed: _Feed) -> None:
        try:
            while True:
                try:
                    batch = await self._log.wait_events(job_id, feed.latest, READ_WAIT)
                except Exception as error:  # the queue failed: say so, try again
                    log.warning(
                        json.dumps({"event": "run_feed_failed", "job": job_id, "error": str(error)})
                    )
                    await asyncio.sleep(RETRY)
                    continue
                if batch:
                    feed.kept.extend(batch)
                    feed.latest = batch[-1].seq
                    changed, feed.changed = feed.changed, asyncio.Event()
                    changed.set()
                if not feed.watchers:
                    break
        finally:
            # No await between the last check and this: a new watcher finds
            # either this feed still reading or none, and starts its own.
            if self._feeds.get(job_id) is feed:
                del self._feeds[job_id]

    async def close(self) -> None:
        for feed in list(self._feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        self._feeds.clear()
