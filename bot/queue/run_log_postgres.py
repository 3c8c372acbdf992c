"""Jobs' event logs on the PostgreSQL queue: the tables, the queries, and `wait_events`.

An append locks its job's head row (an upsert), so concurrent appends to one job,
from any host, take their numbers one after the other: no gap, and a number is
visible only once every lower one is. It notifies `CHANNEL` with the job's id in
the same transaction, so the notification leaves at the commit. An append is
four round trips (a fifth once the log is truncated): BEGIN, the head's lock,
one statement writing everything else, COMMIT. Its arrays go in binary: the
text form escapes every quote of every event in Python. Readers that wait
share one LISTEN connection per queue, opened on the first wait: the queue's own
listener wakes workers, and has no business with every event of every job.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from bot.queue.run_log import (
    MAX_RUN_EVENTS,
    LogHead,
    RunEvent,
    decode_data,
    plan_append,
)

__all__ = ["CHANNEL", "MIGRATION", "PostgresRunLog"]

Conn = AsyncConnection[TupleRow]
Connect = Callable[[], AbstractAsyncContextManager[Conn]]

CHANNEL = "neo_run_events"
# A waiting reader reads again this often even without a notification: a
# notification lost with the listening connection is found late, never lost.
_FALLBACK = 2.0
_RECONNECT = 1.0

# The queue's schema version 7 (bot/queue/pg_schema.py). As in SQLite: a head
# row per job, and the events; `data` is the JSON text the writer encoded.
MIGRATION = (
    """CREATE TABLE neo_run_logs (
        job_id bigint PRIMARY KEY,
        last_seq bigint NOT NULL,
        kept bigint NOT NULL,
        truncated_seq bigint,
        last_at double precision NOT NULL
    )""",
    "CREATE INDEX neo_run_logs_last_at ON neo_run_logs (last_at)",
    """CREATE TABLE neo_run_events (
        job_id bigint NOT NULL,
        seq bigint NOT NULL,
        at double precision NOT NULL,
        kind text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (job_id, seq)
    )""",
)

# The head row, locked until the append commits; made if the job has none.
_LOCK_HEAD = (
    "INSERT INTO neo_run_logs (job_id, last_seq, kept, last_at) VALUES (%s, 0, 0, %s)"
    " ON CONFLICT (job_id) DO UPDATE SET last_seq = neo_run_logs.last_seq"
    " RETURNING last_seq, kept, truncated_seq"
)
# What an append writes, once its plan is made: the new events, the truncated
# event's counts (if they changed), the head; and the notification, which
# leaves at the commit, so a reader it wakes finds what was written.
_WRITE = """
WITH added AS (
    INSERT INTO neo_run_events (job_id, seq, at, kind, data)
    SELECT %(job)s::bigint, * FROM unnest(
        %(seqs)b::bigint[], %(ats)b::float8[], %(kinds)b::text[], %(datas)b::text[]
    )
), counted AS (
    UPDATE neo_run_events SET data = %(truncated)s::text
    WHERE %(truncated)s::text IS NOT NULL AND job_id = %(job)s AND seq = %(truncated_seq)s
), head AS (
    UPDATE neo_run_logs SET last_seq = %(last_seq)s, kept = %(kept)s,
        truncated_seq = %(truncated_seq)s, last_at = greatest(last_at, %(last_at)s)
    WHERE job_id = %(job)s
)
SELECT pg_notify(%(channel)s, %(payload)s)
"""
_EVENTS_AFTER = (
    "SELECT job_id, seq, at, kind, data FROM neo_run_events"
    " WHERE job_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)
_PRUNE = (
    "WITH gone AS (DELETE FROM neo_run_logs WHERE last_at < %s RETURNING job_id)"
    " DELETE FROM neo_run_events WHERE job_id IN (SELECT job_id FROM gone)"
)


class PostgresRunLog:
    """The `RunLog` over the queue's pooled connections and transactions."""

    def __init__(
        self,
        url: str,
        connection: Connect,
        transaction: Connect,
        *,
        limit: int = MAX_RUN_EVENTS,
        connect_timeout: int = 10,
    ) -> None:
        if limit < 2:
            raise ValueError("a job's log keeps at least 2 events")
        self._connection = connection
        self._transaction = transaction
        self._limit = limit
        self._listener = _Listener(url, connect_timeout)

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        if not events:
            async with self._connection() as conn:
                cursor = await conn.execute(
                    "SELECT last_seq FROM neo_run_logs WHERE job_id = %s", (job_id,)
                )
                row = await cursor.fetchone()
            return 0 if row is None else int(row[0])
        async with self._transaction() as conn:
            first_at = min(at for at, _, _ in events)
            cursor = await conn.execute(_LOCK_HEAD, (job_id, first_at))
            found = await cursor.fetchone()
            assert found is not None  # an upsert returns its row
            last_seq, kept, truncated_seq = found
            truncated = None
            if truncated_seq is not None:
                # A statement of its own, after the lock: its snapshot holds what
                # the append this one waited for wrote (one statement with the
                # lock would read the counts as they were before that wait).
                cursor = await conn.execute(
                    "SELECT data FROM neo_run_events WHERE job_id = %s AND seq = %s",
                    (job_id, truncated_seq),
                )
                data = await cursor.fetchone()
                truncated = decode_data(data[0]) if data is not None else {}
            plan = plan_append(
                LogHead(int(last_seq), int(kept), truncated_seq, truncated), events, self._limit
            )
            # The rest is one statement (each part runs, referenced or not; the
            # new rows and the truncated event's update touch different rows).
            columns = [list(column) for column in zip(*plan.rows, strict=True)] or [[]] * 4
            seqs, ats, kinds, datas = columns
            head = plan.head
            await conn.execute(
                _WRITE,
                {
                    "job": job_id,
                    "seqs": seqs,
                    "ats": ats,
                    "kinds": kinds,
                    "datas": datas,
                    "truncated": plan.truncated_update,
                    "truncated_seq": head.truncated_seq,
                    "last_seq": head.last_seq,
                    "kept": head.kept,
                    "last_at": plan.last_at,
                    "channel": CHANNEL,
                    "payload": str(job_id),
                },
            )
        return plan.head.last_seq

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> list[RunEvent]:
        async with self._connection() as conn:
            cursor = await conn.execute(_EVENTS_AFTER, (job_id, after, limit))
            rows = await cursor.fetchall()
        return [_event(row) for row in rows]

    async def wait_events(self, job_id: int, after: int, timeout: float) -> list[RunEvent]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        woken = asyncio.Event()
        listener = self._listener
        # Registered, and listening, before the first read: a commit after the
        # read is heard.
        listener.add(job_id, woken)
        try:
            await listener.ready(deadline - loop.time())
            while True:
                woken.clear()
                found = await self.events_after(job_id, after)
                left = deadline - loop.time()
                if found or left <= 0:
                    return found
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), min(_FALLBACK, left))
        finally:
            listener.discard(job_id, woken)

    async def prune_events(self, older_than: float) -> int:
        async with self._transaction() as conn:
            cursor = await conn.execute(_PRUNE, (older_than,))
            return max(cursor.rowcount, 0)

    async def close(self) -> None:
        await self._listener.close()


class _Listener:
    """One LISTEN connection, opened on the first wait, waking the readers of a job."""

    def __init__(self, url: str, connect_timeout: int) -> None:
        self._url = url
        self._connect_timeout = connect_timeout
        self._waiting: dict[int, set[asyncio.Event]] = {}
        self._task: asyncio.Task[None] | None = None
        self._listening: asyncio.Event | None = None

    def add(self, job_id: int, woken: asyncio.Event) -> None:
        self._waiting.setdefault(job_id, set()).add(woken)
        if self._task is None:
            self._listening = asyncio.Event()
            self._task = asyncio.create_task(self._listen(), name="neo-run-events-listen")

    def discard(self, job_id: int, woken: asyncio.Event) -> None:
        waiting = self._waiting.get(job_id)
        if waiting is not None:
            waiting.discard(woken)
            if not waiting:
                del self._waiting[job_id]

    async def ready(self, timeout: float) -> None:
        """Wait until the LISTEN is in place, up to `timeout` (the fallback read
        covers a database that cannot be reached)."""
        if self._listening is not None and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._listening.wait(), min(timeout, _FALLBACK))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _listen(self) -> None:
        listening = self._listening
        assert listening is not None
        while True:
            with contextlib.suppress(psycopg.Error, OSError):
                conn = await AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=self._connect_timeout
                )
                async with conn:
                    await conn.execute(f'LISTEN "{CHANNEL}"'.encode())
                    listening.set()
                    # Whatever was appended while not listening is found now.
                    self._wake_all()
                    async for notification in conn.notifies():
                        self._wake(notification.payload)
            listening.clear()
            self._wake_all()
            await asyncio.sleep(_RECONNECT)

    def _wake(self, payload: str) -> None:
        with contextlib.suppress(ValueError):
            for woken in self._waiting.get(int(payload), ()):
                woken.set()

    def _wake_all(self) -> None:
        for waiting in self._waiting.values():
            for woken in waiting:
                woken.set()


def _event(row: Sequence[Any]) -> RunEvent:
    job_id, seq, at, kind, data = row
    return RunEvent(int(job_id), int(seq), float(at), str(kind), decode_data(data))
