"""Jobs' event logs on the SQLite queue: the tables, the queries, and `wait_events`.

Appends go through the queue's one writer thread, so each job's numbering needs no
lock: the head row holds the last seq. A reader in this process is woken by the
append itself; one in another process (`neo jobs logs --follow` beside `neo
serve`) finds new events at its next poll, every `POLL` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bot.queue.run_log import (
    MAX_RUN_EVENTS,
    LogHead,
    RunEvent,
    decode_data,
    plan_append,
)

__all__ = ["POLL", "SCHEMA", "SqliteRunLog"]

# How often a waiting reader looks for another process's appends.
POLL = 0.1

# The queue's schema version 6 (bot/queue/sqlite.py's migrations). A head row per
# job: its last seq, the events counted against the bound, its `truncated` event,
# and when its last event was recorded (retention drops a log by it).
SCHEMA = (
    """CREATE TABLE run_logs (
        job_id INTEGER PRIMARY KEY,
        last_seq INTEGER NOT NULL,
        kept INTEGER NOT NULL,
        truncated_seq INTEGER,
        last_at REAL NOT NULL
    )""",
    "CREATE INDEX run_logs_last_at ON run_logs (last_at)",
    """CREATE TABLE run_events (
        job_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (job_id, seq)
    ) WITHOUT ROWID""",
)

_EVENTS_AFTER = (
    "SELECT job_id, seq, at, kind, data FROM run_events"
    " WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?"
)

Write = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]
Read = Callable[[str, Sequence[object]], Awaitable[list[Any]]]


class SqliteRunLog:
    """The `RunLog` over the queue's writer (`write`) and reader (`read`)."""

    def __init__(self, write: Write, read: Read, *, limit: int = MAX_RUN_EVENTS) -> None:
        if limit < 2:
            raise ValueError("a job's log keeps at least 2 events")
        self._write = write
        self._read = read
        self._limit = limit
        # Readers waiting in this process, by job: woken by this process's appends.
        self._waiting: dict[int, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        limit = self._limit

        def operation(conn: sqlite3.Connection) -> int:
            return _append(conn, job_id, events, limit)

        last = int(await self._write(operation))
        if events:
            self._wake(job_id)
        return last

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> list[RunEvent]:
        rows = await self._read(_EVENTS_AFTER, (job_id, after, limit))
        return [_event(row) for row in rows]

    async def wait_events(self, job_id: int, after: int, timeout: float) -> list[RunEvent]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        woken = asyncio.Event()
        waiter = (loop, woken)
        # Registered before the first read: an append between the read and the
        # wait still wakes it.
        self._waiting.setdefault(job_id, set()).add(waiter)
        try:
            while True:
                woken.clear()
                found = await self.events_after(job_id, after)
                left = deadline - loop.time()
                if found or left <= 0:
                    return found
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), min(POLL, left))
        finally:
            waiting = self._waiting.get(job_id)
            if waiting is not None:
                waiting.discard(waiter)
                if not waiting:
                    del self._waiting[job_id]

    async def prune_events(self, older_than: float) -> int:
        def operation(conn: sqlite3.Connection) -> int:
            removed = conn.execute(
                "DELETE FROM run_events WHERE job_id IN"
                " (SELECT job_id FROM run_logs WHERE last_at < ?)",
                (older_than,),
            ).rowcount
            conn.execute("DELETE FROM run_logs WHERE last_at < ?", (older_than,))
            return int(removed)

        return int(await self._write(operation))

    def _wake(self, job_id: int) -> None:
        for loop, woken in tuple(self._waiting.get(job_id, ())):
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if loop is running:
                woken.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(woken.set)


def _append(
    conn: sqlite3.Connection,
    job_id: int,
    events: Sequence[tuple[float, str, dict[str, object]]],
    limit: int,
) -> int:
    row = conn.execute(
        "SELECT last_seq, kept, truncated_seq FROM run_logs WHERE job_id = ?", (job_id,)
    ).fetchone()
    head = LogHead()
    if row is not None:
        last_seq, kept, truncated_seq = row
        truncated = None
        if truncated_seq is not None:
            (data,) = conn.execute(
                "SELECT data FROM run_events WHERE job_id = ? AND seq = ?", (job_id, truncated_seq)
            ).fetchone() or ("{}",)
            truncated = decode_data(data)
        head = LogHead(last_seq, kept, truncated_seq, truncated)
    if not events:
        return head.last_seq
    plan = plan_append(head, events, limit)
    conn.executemany(
        "INSERT INTO run_events (job_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)",
        [(job_id, *event) for event in plan.rows],
    )
    if plan.truncated_update is not None:
        conn.execute(
            "UPDATE run_events SET data = ? WHERE job_id = ? AND seq = ?",
            (plan.truncated_update, job_id, plan.head.truncated_seq),
        )
    conn.execute(
        "INSERT INTO run_logs (job_id, last_seq, kept, truncated_seq, last_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET"
        " last_seq = excluded.last_seq, kept = excluded.kept,"
        " truncated_seq = excluded.truncated_seq, last_at = max(last_at, excluded.last_at)",
        (job_id, plan.head.last_seq, plan.head.kept, plan.head.truncated_seq, plan.last_at),
    )
    return plan.head.last_seq


def _event(row: Sequence[Any]) -> RunEvent:
    job_id, seq, at, kind, data = row
    return RunEvent(int(job_id), int(seq), float(at), str(kind), decode_data(data))
