"""The shared queue: procrastinate's jobs table dispatches, Neo's tables beside it.

Each job is a row in `procrastinate_jobs` (its state, its thread as the
lock, its stop request) and one in `neo_jobs` with the same id (the
request, dedupe key, attempts, lease and outcome), changed together in one
transaction. Claims go through procrastinate's fetch, ends through its
finish, cancel and retry procedures. Every host's intake and workers use
one database, through a psycopg pool; a LISTEN connection on
procrastinate's channels wakes workers when a job becomes claimable, on
any host. docs/architecture.md, "The queue", has the rest.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from bot.jobs import Conclusion, Job, JobOutcome, JobRequest, JobState, Lane
from bot.queue import steering_postgres
from bot.queue.base import (
    DEFAULT_MAX_ATTEMPTS,
    CancelApplied,
    EnqueueResult,
    Heartbeat,
    LeaseLost,
    QueueClosed,
    QueueError,
    QueueSnapshot,
    SessionFiles,
    SpendLine,
    SpendRecord,
    lease_ceiling,
    overran,
    queue_snapshot,
)
from bot.queue.pg_schema import first_line
from bot.queue.rows import (
    encode_outcome,
    ended_outcome,
    job_from_row,
    list_filter,
    named_stop,
    spend_lines,
    spent_by,
    stopped_outcome,
)
from bot.queue.run_log import MAX_RUN_EVENTS, RunLogOf
from bot.queue.run_log_postgres import PostgresRunLog
from bot.queue.steering import Steer, check_steer

__all__ = ["CHANNEL", "QUEUES", "STATUS_OF_STATE", "PostgresQueue"]

Clock = Callable[[], float]
Conn = AsyncConnection[TupleRow]

# procrastinate's queue of each lane. Runs carry their thread as the
# lock: procrastinate's fetch takes a locked job only when it is the oldest
# of its lock and none of its lock is running, and its unique index on a
# running job's lock says no to a second whatever claims race. Stops carry
# none: they are claimable while their thread's run holds it.
QUEUES: dict[Lane, str] = {"run": "neo_run", "cancel": "neo_cancel"}
_ALL_QUEUES = list(QUEUES.values())
# procrastinate's insert trigger notifies these for every job it queues.
_INSERTED = tuple(f"procrastinate_queue_v1#{queue}" for queue in _ALL_QUEUES)

# Notified by Neo, after the commit, when a job it did not insert may have
# become claimable (a retry, a release, a requeue, a run ending that frees
# its thread). As its own statement: PostgreSQL serialises the commits of
# transactions that notify, each with its own WAL flush.
CHANNEL = "neo_jobs"
_NOTIFY = f"NOTIFY {CHANNEL}"
# How long an operation waits for a pooled connection, unless the URL says.
_CONNECT_TIMEOUT = 10.0

# Jobs as `rows.job_from_row` reads them, from the view joining both rows
# (bot/queue/pg_schema.py, version 4).
_JOB_COLUMNS = (
    " id, request, state, attempts, created_at, updated_at,"
    " worker, lease_expires_at, cancel_requested, result"
)
_SELECT_JOBS = "SELECT" + _JOB_COLUMNS + " FROM neo_job_states"

# procrastinate picks and marks the job (no procrastinate worker: leases are
# Neo's, per job); Neo records the attempt and the lease.
_CLAIM = (
    "WITH fetched AS (SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], NULL))"
    " UPDATE neo_jobs SET attempts = attempts + 1, worker = %s, lease_expires_at = %s,"
    " updated_at = %s, session_key = NULL FROM fetched WHERE neo_jobs.id = fetched.id"
    " RETURNING neo_jobs.id, neo_jobs.request, 'running', neo_jobs.attempts,"
    " neo_jobs.created_at, neo_jobs.updated_at, neo_jobs.worker, neo_jobs.lease_expires_at,"
    " false, neo_jobs.result"
)
# Neo's row first, then procrastinate's: the order every transition locks in.
_FINISH = (
    "WITH mine AS (UPDATE neo_jobs SET result = %s, updated_at = %s, worker = NULL,"
    " lease_expires_at = NULL WHERE id = %s AND worker = %s RETURNING id)"
    " SELECT procrastinate_finish_job_v1(id, %s::procrastinate_job_status, false) FROM mine"
)
_RETRY = (
    "WITH mine AS (SELECT id FROM neo_jobs WHERE id = %s AND kind = 'run' FOR UPDATE),"
    # procrastinate retries failed jobs only; `neo jobs retry` takes cancelled ones too.
    " again AS (UPDATE procrastinate_jobs SET status = 'todo', abort_requested = false"
    " WHERE id IN (SELECT id FROM mine) AND status IN ('failed', 'cancelled', 'aborted')"
    " RETURNING id)"
    " UPDATE neo_jobs SET attempts = 0, worker = NULL, lease_expires_at = NULL, result = NULL,"
    " updated_at = %s FROM again WHERE neo_jobs.id = again.id"
)
# procrastinate's status of a job in each `JobState` (the view neo_job_states
# reads it back; "aborted" is cancelled too, while it ran).
STATUS_OF_STATE = {
    JobState.QUEUED: "todo",
    JobState.RUNNING: "doing",
    JobState.SUCCEEDED: "succeeded",
    JobState.FAILED: "failed",
    JobState.CANCELLED: "cancelled",
}
# How a running job ends, by the state Neo gives it.
_END_STATUS = {**STATUS_OF_STATE, JobState.CANCELLED: "aborted"}

_RECORD_DELIVERY = (
    "INSERT INTO neo_deliveries (id, received_at) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING"
)
# The delivery, its new jobs, and for each request the id of the job made now
# (`made`) or before this statement began (`old`); both are missing only for
# a job another delivery committed meanwhile. Nothing is inserted for a
# delivery seen before.
#
# `dispatched` is each new job's procrastinate row, under the id `neo_jobs`
# drew from procrastinate's sequence. Inserted here rather than through
# procrastinate_defer_jobs_v1: the dedupe key decides whether the job exists,
# and the two rows must be made in the same statement. procrastinate's
# triggers run as for any job it queues (the notification that wakes
# workers among them).
_ENQUEUE = (
    "WITH delivery AS (INSERT INTO neo_deliveries (id, received_at)"
    " VALUES (%(delivery)s, %(now)s) ON CONFLICT (id) DO NOTHING RETURNING id),"
    " wanted AS (SELECT * FROM unnest(%(kinds)s::text[], %(keys)s::text[], %(threads)s::text[],"
    " %(requests)s::text[]) WITH ORDINALITY AS w (kind, dedupe_key, thread_key, request, n)),"
    " made AS (INSERT INTO neo_jobs (delivery_id, dedupe_key, kind, thread_key, request,"
    " created_at, updated_at) SELECT %(delivery)s, w.dedupe_key, w.kind, w.thread_key, w.request,"
    " %(now)s, %(now)s FROM wanted AS w WHERE EXISTS (SELECT 1 FROM delivery)"
    " ORDER BY w.n ON CONFLICT (dedupe_key) DO NOTHING RETURNING id, dedupe_key, kind, thread_key),"
    " dispatched AS (INSERT INTO procrastinate_jobs (id, queue_name, task_name, lock)"
    " SELECT id, 'neo_' || kind, 'neo.' || kind, CASE WHEN kind = 'run' THEN thread_key END"
    " FROM made ORDER BY id)"
    # Subqueries, not joins: the planner would rather scan the table than
    # guess that a handful of keys want a handful of index lookups.
    " SELECT EXISTS (SELECT 1 FROM delivery),"
    " (SELECT made.id FROM made WHERE made.dedupe_key = w.dedupe_key),"
    " (SELECT old.id FROM neo_jobs AS old WHERE old.dedupe_key = w.dedupe_key)"
    " FROM wanted AS w ORDER BY w.n"
)

# Many one-request deliveries at once (no delivery id twice): for each, whether
# it is new and the id of the job it made. A job not made for a new delivery
# has a key stored before, or by an earlier delivery of the batch.
#
# Rows are inserted in key order (the first of a batch's deliveries sharing a
# dedupe key makes its job): two batches inserting the same keys in different
# orders would each wait for the other, until PostgreSQL broke the deadlock.
#
# The batch arrives as one JSON array of [delivery, kind, key, thread,
# request] rows: orjson writes it in C, where psycopg's text arrays were
# escaped element by element in Python (a tenth of `neo serve`'s CPU).
_ENQUEUE_BATCH = (
    "WITH input AS (SELECT e.v ->> 0 AS delivery_id, e.v ->> 1 AS kind,"
    " e.v ->> 2 AS dedupe_key, e.v ->> 3 AS thread_key, e.v ->> 4 AS request, e.n"
    " FROM json_array_elements(%(batch)s::json) WITH ORDINALITY AS e (v, n)),"
    " delivery AS (INSERT INTO neo_deliveries (id, received_at)"
    " SELECT delivery_id, %(now)s FROM input ORDER BY delivery_id"
    " ON CONFLICT (id) DO NOTHING RETURNING id),"
    " made AS (INSERT INTO neo_jobs (delivery_id, dedupe_key, kind, thread_key, request,"
    " created_at, updated_at) SELECT i.delivery_id, i.dedupe_key, i.kind, i.thread_key,"
    " i.request, %(now)s, %(now)s FROM input AS i"
    " WHERE i.delivery_id IN (SELECT id FROM delivery) ORDER BY i.dedupe_key, i.n"
    " ON CONFLICT (dedupe_key) DO NOTHING RETURNING id, delivery_id, kind, thread_key),"
    " dispatched AS (INSERT INTO procrastinate_jobs (id, queue_name, task_name, lock)"
    " SELECT id, 'neo_' || kind, 'neo.' || kind, CASE WHEN kind = 'run' THEN thread_key END"
    " FROM made ORDER BY id)"
    " SELECT EXISTS (SELECT 1 FROM delivery AS d WHERE d.id = i.delivery_id),"
    " (SELECT m.id FROM made AS m WHERE m.delivery_id = i.delivery_id)"
    " FROM input AS i ORDER BY i.n"
)

# Deliveries gathered into one statement, and statements in flight at once.
_MAX_BATCH = 256
_FLUSHES = 4
# Tries of an enqueue statement that PostgreSQL chose as a deadlock's victim.
_DEADLOCK_ATTEMPTS = 5

_SPENT_BY_REPOSITORY = (
    "SELECT coalesce(sum(cost_usd), 0) FROM neo_spend WHERE repository = %s AND at >= %s"
)
_SPENT_BY_INSTALLATION = (
    "SELECT coalesce(sum(cost_usd), 0) FROM neo_spend WHERE installation_id = %s AND at >= %s"
)
_SPEND_LINES = (
    "SELECT to_char(to_timestamp(at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, repository,"
    " model, count(DISTINCT job_id), coalesce(sum(cost_usd), 0), coalesce(sum(input_tokens), 0),"
    " coalesce(sum(output_tokens), 0) FROM neo_spend"
    " WHERE at >= %s AND (%s::text IS NULL OR repository = %s)"
    " GROUP BY day, repository, model ORDER BY day DESC, repository, model"
)


_LOAD_SESSION = (
    "SELECT s.transcript,"
    " ARRAY(SELECT c.number FROM neo_session_children AS c WHERE c.session_id = s.id"
    " ORDER BY c.number),"
    " ARRAY(SELECT c.transcript FROM neo_session_children AS c WHERE c.session_id = s.id"
    " ORDER BY c.number)"
    " FROM neo_sessions AS s WHERE s.id = %s"
)

_Row = tuple[str, str, str, str]  # kind, dedupe key, thread key, request JSON
_T = TypeVar("_T")


@dataclass(slots=True)
class _Pending:
    """One caller's one-request delivery, waiting for its batch."""

    delivery_id: str
    row: _Row
    future: asyncio.Future[EnqueueResult]


def connect_timeout_of(url: str) -> float:
    """The seconds an operation waits for a connection: the URL's libpq
    `connect_timeout` when it has a positive one (an operator who shortens
    the wait for a new connection means every wait), else 10. Libpq reads 0
    as "forever"; the queue never waits forever."""
    try:
        given = float(conninfo_to_dict(url).get("connect_timeout") or 0)
    except (psycopg.ProgrammingError, TypeError, ValueError):
        return _CONNECT_TIMEOUT
    return max(1.0, given) if given > 0 else _CONNECT_TIMEOUT


class PostgresQueue(RunLogOf):
    """The `JobQueue` on a PostgreSQL database migrated by `neo db migrate`.

    Open it with `open_queue`, which checks the schema first. The pool opens
    on first use, in the event loop that uses it. `queued` is set whenever
    the database says a job may have become claimable, by whichever host;
    `listening` while the connection that hears it is up.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = time.time,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        min_connections: int = 1,
        max_connections: int = 16,
        connect_timeout: float | None = None,
        listen: bool = True,
        job_timeout: float | None = None,
        max_run_events: int = MAX_RUN_EVENTS,
    ) -> None:
        if connect_timeout is None:
            connect_timeout = connect_timeout_of(url)
        self._url = url
        self._clock = clock
        self._max_attempts = max_attempts
        self._job_timeout = job_timeout
        self._ceiling = lease_ceiling(job_timeout)
        self._connect_timeout = max(1, round(connect_timeout))  # libpq takes whole seconds
        # Autocommit: most operations are one statement, one round trip. No
        # check on lending a connection (another round trip each time): a
        # connection the server dropped fails one operation, and the pool
        # replaces it.
        self._pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            url,
            min_size=min_connections,
            max_size=max_connections,
            timeout=connect_timeout,
            open=False,
            kwargs={"autocommit": True},
        )
        self._listen = listen
        self._opened = False
        self._closed = False
        self._opening: asyncio.Lock | None = None
        self._listener: asyncio.Task[None] | None = None
        self.queued = asyncio.Event()
        self.listening = asyncio.Event()
        self._pending: list[_Pending] = []
        self._flushing = 0
        self._flushes: set[asyncio.Task[None]] = set()
        self._run_log: PostgresRunLog = PostgresRunLog(
            url,
            self._connection,
            self._transaction,
            limit=max_run_events,
            connect_timeout=self._connect_timeout,
        )

    async def __aenter__(self) -> PostgresQueue:
        await self._open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- writes ---------------------------------------------------------------

    async def enqueue(self, delivery_id: str, requests: Sequence[JobRequest]) -> EnqueueResult:
        rows = [_request_row(request) for request in requests]
        now = self._clock()
        if not rows:
            async with self._connection() as conn:
                cursor = await conn.execute(_RECORD_DELIVERY, (delivery_id, now))
                return EnqueueResult(duplicate=cursor.rowcount == 0)
        if len(rows) == 1:
            return await self._enqueue_one(delivery_id, rows[0])
        kinds, keys, threads, bodies = (list(column) for column in zip(*rows, strict=True))
        params = {
            "delivery": delivery_id,
            "now": now,
            "kinds": kinds,
            "keys": keys,
            "threads": threads,
            "requests": bodies,
        }
        written = await self._deadlock_retried(lambda: self._enqueue_many(params, keys))
        if written is None:
            return EnqueueResult(duplicate=True)
        found, late = written
        job_ids: list[int] = []
        existing: list[int] = []
        seen: set[str] = set()
        for key, (_, made, old) in zip(keys, _ids(found), strict=True):
            job_id = made if made is not None else old if old is not None else late[key]
            # A key met earlier in this delivery was made by that earlier request.
            if made is None or key in seen:
                existing.append(job_id)
            seen.add(key)
            job_ids.append(job_id)
        return EnqueueResult(duplicate=False, job_ids=tuple(job_ids), existing=tuple(existing))

    async def _enqueue_many(
        self, params: dict[str, object], keys: builtins.list[str]
    ) -> tuple[builtins.list[Any], dict[str, int]] | None:
        """One delivery's requests in one statement: its rows, and keys made
        meanwhile; None for a delivery seen before."""
        # One statement, so one round trip, committed (and fsynced) on return.
        async with self._connection() as conn:
            cursor = await conn.execute(_ENQUEUE, params)
            found = await cursor.fetchall()
            if not found[0][0]:
                return None
            missing = [
                key
                for key, (_, made, old) in zip(keys, _ids(found), strict=True)
                if made is None and old is None
            ]
            late: dict[str, int] = {}
            if missing:
                # Made by a delivery that committed after this statement began
                # (its ON CONFLICT waited for it): a new statement sees it.
                cursor = await conn.execute(
                    "SELECT dedupe_key, id FROM neo_jobs WHERE dedupe_key = ANY(%s)", (missing,)
                )
                late = {str(key): int(job_id) for key, job_id in await cursor.fetchall()}
        return found, late

    async def _deadlock_retried(self, write: Callable[[], Awaitable[_T]]) -> _T:
        """`write`, sent again when PostgreSQL rolled it back to break a deadlock.

        Two enqueues that insert the same delivery ids or dedupe keys in
        different orders can each wait for the other; PostgreSQL then aborts
        one statement whole, and advises sending it again. A caller hears of
        a deadlock only if it recurs on every try.
        """
        for attempt in range(1, _DEADLOCK_ATTEMPTS + 1):
            try:
                return await write()
            except QueueError as error:
                if attempt == _DEADLOCK_ATTEMPTS or not isinstance(
                    error.__cause__, psycopg.errors.DeadlockDetected
                ):
                    raise
        raise AssertionError("unreachable")

    async def _enqueue_one(self, delivery_id: str, row: _Row) -> EnqueueResult:
        """The common delivery, one request: batched with those arriving meanwhile."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[EnqueueResult] = loop.create_future()
        self._pending.append(_Pending(delivery_id, row, future))
        if self._flushing < _FLUSHES:
            self._flushing += 1
            task = asyncio.create_task(self._flush(), name="neo-queue-enqueue")
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        return await future

    async def _flush(self) -> None:
        """Commit pending one-request deliveries, a batch per statement, until none is left.

        Group commit, as in the SQLite queue: while one batch's statement is
        in flight the next gathers, so batches grow with the load and one
        delivery alone waits for no timer.
        """
        try:
            while self._pending:
                batch: list[_Pending] = []
                ids: set[str] = set()
                later: list[_Pending] = []
                for pending in self._pending:
                    if pending.future.done():  # its caller gave up before it was sent
                        continue
                    # A delivery id twice in one statement would look new twice:
                    # the second waits for the next batch, and is a duplicate there.
                    if len(batch) >= _MAX_BATCH or pending.delivery_id in ids:
                        later.append(pending)
                        continue
                    ids.add(pending.delivery_id)
                    batch.append(pending)
                self._pending = later
                if batch:
                    await self._commit(batch)
        finally:
            self._flushing -= 1

    async def _commit(self, batch: builtins.list[_Pending]) -> None:
        try:
            written = await self._deadlock_retried(lambda: self._commit_once(batch))
        except QueueError as error:
            # Nothing in this batch is durable: every caller hears so.
            for pending in batch:
                if not pending.future.done():
                    pending.future.set_exception(error)
            return
        if written is None:
            return
        batch, found, late = written
        for pending, (fresh, made) in zip(batch, found, strict=True):
            if pending.future.done():  # its caller gave up
                continue
            if not fresh:
                result = EnqueueResult(duplicate=True)
            elif made is not None:
                result = EnqueueResult(duplicate=False, job_ids=(int(made),))
            else:
                old = late[pending.row[1]]
                result = EnqueueResult(duplicate=False, job_ids=(old,), existing=(old,))
            pending.future.set_result(result)

    async def _commit_once(
        self, batch: builtins.list[_Pending]
    ) -> tuple[builtins.list[_Pending], builtins.list[Any], dict[str, int]] | None:
        """One batch statement: the deliveries sent, its rows, and keys made earlier."""
        async with self._connection() as conn:
            # Once a connection is lent: a caller that gave up meanwhile (a
            # database away answers no one within the webhook's bound) was
            # told its delivery is not queued, and it is not.
            batch = [pending for pending in batch if not pending.future.done()]
            if not batch:
                return None
            params = {
                "now": self._clock(),
                "batch": orjson.dumps(
                    [(pending.delivery_id, *pending.row) for pending in batch]
                ).decode(),
            }
            cursor = await conn.execute(_ENQUEUE_BATCH, params)
            found = await cursor.fetchall()
            missing = [
                pending.row[1]
                for pending, (fresh, made) in zip(batch, found, strict=True)
                if fresh and made is None
            ]
            late: dict[str, int] = {}
            if missing:
                # Keys stored before, or by an earlier delivery of this batch.
                cursor = await conn.execute(
                    "SELECT dedupe_key, id FROM neo_jobs WHERE dedupe_key = ANY(%s)",
                    (missing,),
                )
                late = {str(key): int(job_id) for key, job_id in await cursor.fetchall()}
        return batch, found, late

    async def claim(self, worker: str, lease: float, *, only: Lane | None = None) -> Job | None:
        queues = _ALL_QUEUES if only is None else [QUEUES[only]]
        # A lost race for a thread (procrastinate's unique index on running
        # locks said no) is retried: the next round sees the winner's run.
        for _ in range(5):
            try:
                async with self._connection() as conn:
                    now = self._clock()
                    expires = now + min(lease, self._ceiling)
                    cursor = await conn.execute(_CLAIM.encode(), (queues, worker, expires, now))
                    row = await cursor.fetchone()
                    return None if row is None else job_from_row(row)
            except QueueError as error:
                if not isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                    raise
        return None

    async def apply_cancel(self, request_id: int) -> CancelApplied:
        async with self._transaction() as conn:
            cursor = await conn.execute(
                "SELECT thread_key, request FROM neo_jobs WHERE id = %s AND kind = 'cancel'",
                (request_id,),
            )
            row = await cursor.fetchone()
            if row is None:
                raise QueueError(f"job {request_id} is not a cancel request")
            thread_key, request = row
            author = json.loads(request).get("author") or "someone"
            now = self._clock()
            reason = f"cancelled: @{author} asked to stop (job {request_id})"
            # The thread's runs before the request, locked (Neo's row, then
            # procrastinate's). procrastinate cancels a queued one and asks a
            # running one to abort.
            cursor = await conn.execute(
                "WITH stopping AS (SELECT id, status FROM neo_job_states WHERE thread_key = %s"
                " AND kind = 'run' AND id < %s AND status IN ('todo', 'doing')"
                " ORDER BY id FOR UPDATE)"
                " SELECT id, status = 'doing', procrastinate_cancel_job_v1(id, status = 'doing',"
                " false) FROM stopping ORDER BY id",
                (thread_key, request_id),
            )
            stopping = await cursor.fetchall()
            # In id order (the statement's), as CancelApplied lists them.
            cancelled = tuple(int(job_id) for job_id, running, _ in stopping if not running)
            requested = tuple(int(job_id) for job_id, running, _ in stopping if running)
            await conn.execute(
                "UPDATE neo_jobs SET result = %s, updated_at = %s WHERE id = ANY(%s)",
                (
                    encode_outcome(JobOutcome(conclusion=Conclusion.CANCELLED, error=reason)),
                    now,
                    list(cancelled),
                ),
            )
            applied = CancelApplied(cancelled=cancelled, cancel_requested=requested)
            # Written now, not when the request finishes: the stopped run looks
            # here for who stopped it as soon as its heartbeat tells it to.
            await conn.execute(
                "UPDATE neo_jobs SET result = %s, updated_at = %s WHERE id = %s",
                (encode_outcome(stopped_outcome(applied)), now, request_id),
            )
        return applied

    async def heartbeat(self, job_id: int, worker: str, lease: float) -> Heartbeat:
        async with self._connection() as conn:
            now = self._clock()
            cursor = await conn.execute(
                "UPDATE neo_jobs AS n SET lease_expires_at = least(%s, n.updated_at + %s)"
                " FROM procrastinate_jobs AS p WHERE n.id = %s AND p.id = n.id AND n.worker = %s"
                " AND %s < n.updated_at + %s RETURNING p.abort_requested",
                (now + lease, self._ceiling, job_id, worker, now, self._ceiling),
            )
            row = await cursor.fetchone()
        if row is None:
            return Heartbeat(lease_lost=True)
        return Heartbeat(lease_lost=False, cancel_requested=bool(row[0]))

    async def finish(self, job_id: int, worker: str, outcome: JobOutcome) -> None:
        async with self._connection() as conn:
            cursor = await conn.execute(
                _FINISH.encode(),
                (
                    encode_outcome(outcome),
                    self._clock(),
                    job_id,
                    worker,
                    _END_STATUS[outcome.conclusion.state],
                ),
            )
            if not await cursor.fetchall():
                raise LeaseLost(f"job {job_id} is no longer running under {worker}")
            # The thread's next run may be claimable now.
            await _notify(conn)

    async def hold_session(self, job_id: int, worker: str, session: str) -> bool:
        try:
            async with self._connection() as conn:
                cursor = await conn.execute(
                    "UPDATE neo_jobs SET session_key = %s WHERE id = %s AND worker = %s",
                    (session, job_id, worker),
                )
                if cursor.rowcount == 0:
                    raise LeaseLost(f"job {job_id} is no longer running under {worker}")
        except QueueError as error:
            # The unique index: another running job holds the session.
            if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                return False
            raise
        return True

    async def release(self, job_id: int, worker: str) -> None:
        async with self._transaction() as conn:
            cursor = await conn.execute(
                "SELECT cancel_requested FROM neo_job_states WHERE id = %s AND worker = %s"
                " FOR UPDATE",
                (job_id, worker),
            )
            row = await cursor.fetchone()
            if row is None:
                return
            now = self._clock()
            if row[0]:
                await _end(
                    conn, job_id, JobState.CANCELLED, "cancelled before its worker finished it", now
                )
                return
            # A graceful shutdown is not a failed attempt.
            await _requeue(conn, job_id, now, counts=False)
        await self._notify()

    async def requeue_expired(self) -> builtins.list[int]:
        async with self._transaction() as conn:
            now = self._clock()
            # SKIP LOCKED: hosts sweeping at once each handle a job once.
            cursor = await conn.execute(
                "SELECT id, attempts, cancel_requested, updated_at, lease_expires_at"
                " FROM neo_job_states WHERE worker IS NOT NULL AND lease_expires_at < %s"
                " ORDER BY id FOR UPDATE SKIP LOCKED",
                (now,),
            )
            expired = await cursor.fetchall()
            for job_id, attempts, cancel_requested, claimed_at, lease_end in expired:
                if cancel_requested:
                    await _end(
                        conn,
                        job_id,
                        JobState.CANCELLED,
                        "cancelled; its worker stopped answering",
                        now,
                    )
                elif self._job_timeout is not None and lease_end >= claimed_at + self._ceiling:
                    # Its worker beat up to the ceiling, so it was alive but not
                    # finishing: another attempt would only hang as long again.
                    reason = overran(self._job_timeout) + "; its worker did not stop it"
                    await _end(conn, job_id, JobState.FAILED, reason, now)
                elif attempts >= self._max_attempts:
                    await _end(
                        conn,
                        job_id,
                        JobState.FAILED,
                        f"gave up after {attempts} attempts: each time the worker's lease"
                        " expired before it finished",
                        now,
                    )
                else:
                    await _requeue(conn, job_id, now, counts=True)
        if expired:
            await self._notify()
        return [int(job_id) for job_id, *_ in expired]

    async def cancel(self, job_id: int, *, by: str | None = None) -> bool:
        async with self._transaction() as conn:
            cursor = await conn.execute(
                "SELECT status FROM neo_job_states WHERE id = %s FOR UPDATE", (job_id,)
            )
            row = await cursor.fetchone()
            if row is None or row[0] not in ("todo", "doing"):
                return False
            # procrastinate cancels a queued job and asks a running one to abort.
            await conn.execute(
                "SELECT procrastinate_cancel_job_v1(%s, %s, false)", (job_id, row[0] == "doing")
            )
            if row[0] == "todo":
                await conn.execute(
                    "UPDATE neo_jobs SET result = %s, updated_at = %s WHERE id = %s",
                    (
                        ended_outcome(JobState.CANCELLED, "cancelled on request before it ran")
                        if by is None
                        else named_stop(by, ran=False),
                        self._clock(),
                        job_id,
                    ),
                )
            elif by is not None:
                await conn.execute(
                    "UPDATE neo_jobs SET result = %s WHERE id = %s",
                    (named_stop(by, ran=True), job_id),
                )
            return True

    async def retry(self, job_id: int) -> bool:
        async with self._connection() as conn:
            cursor = await conn.execute(_RETRY.encode(), (job_id, self._clock()))
            if cursor.rowcount != 1:
                return False
            await _notify(conn)
            return True

    # -- reads ----------------------------------------------------------------

    async def get(self, job_id: int) -> Job | None:
        rows = await self._read(_SELECT_JOBS + " WHERE id = %s", (job_id,))
        return job_from_row(rows[0]) if rows else None

    async def list(
        self,
        *,
        state: JobState | None = None,
        repository: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        clause, params = list_filter(state, repository, "%s")
        rows = await self._read(
            _SELECT_JOBS + clause + " ORDER BY id DESC LIMIT %s", (*params, limit)
        )
        return [job_from_row(row) for row in rows]

    async def counts(self) -> dict[JobState, int]:
        rows = await self._read("SELECT state, count(*) FROM neo_job_states GROUP BY state", ())
        counts = dict.fromkeys(JobState, 0)
        for state, number in rows:
            counts[JobState(state)] = int(number)
        return counts

    async def snapshot(self) -> QueueSnapshot:
        rows = await self._read(
            "SELECT state, count(*), min(updated_at) FROM neo_job_states GROUP BY state", ()
        )
        return queue_snapshot(rows, self._clock())

    async def ping(self) -> None:
        await self._read("SELECT 1", ())

    async def last_dedupe_key(self, prefix: str) -> str | None:
        if not prefix:
            raise ValueError("a dedupe key prefix must not be empty")
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = await self._read(
            "SELECT dedupe_key FROM neo_jobs WHERE dedupe_key >= %s AND dedupe_key < %s"
            " ORDER BY dedupe_key DESC LIMIT 1",
            (prefix, end),
        )
        return str(rows[0][0]) if rows else None

    # -- spend ----------------------------------------------------------------

    async def record_spend(self, records: Sequence[SpendRecord]) -> None:
        if not records:
            return
        rows = [
            (
                r.job_id,
                r.repository.lower(),
                r.installation_id,
                r.model,
                r.at,
                r.cost_usd,
                r.input_tokens,
                r.output_tokens,
            )
            for r in records
        ]
        async with self._transaction() as conn, conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO neo_spend (job_id, repository, installation_id, model, at,"
                " cost_usd, input_tokens, output_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (job_id, model, at) DO NOTHING",
                rows,
            )

    async def spent_since(
        self, since: float, *, repository: str | None = None, installation_id: int | None = None
    ) -> float:
        by_repository, value = spent_by(repository, installation_id)
        sql = _SPENT_BY_REPOSITORY if by_repository else _SPENT_BY_INSTALLATION
        rows = await self._read(sql, (value, since))
        return float(rows[0][0])

    async def spend(
        self, since: float, *, repository: str | None = None
    ) -> builtins.list[SpendLine]:
        name = None if repository is None else repository.lower()
        rows = await self._read(_SPEND_LINES, (since, name, name))
        return spend_lines(rows)

    # -- sessions -------------------------------------------------------------

    async def load_session(self, session_id: str) -> SessionFiles | None:
        # One statement, one snapshot: never a transcript with another save's children.
        # Binary results: hex-encoded text would double megabytes of transcript.
        async with self._connection() as conn:
            cursor = await conn.execute(_LOAD_SESSION, (session_id,), binary=True)
            row = await cursor.fetchone()
        if row is None:
            return None
        transcript, numbers, children = row
        return SessionFiles(
            transcript=bytes(transcript),
            children=tuple((int(n), bytes(c)) for n, c in zip(numbers, children, strict=True)),
        )

    async def save_session(
        self, job_id: int, worker: str, session_id: str, files: SessionFiles
    ) -> bool:
        async with self._transaction() as conn:
            # FOR UPDATE: the lease cannot be taken from under the save until it commits.
            cursor = await conn.execute(
                "SELECT 1 FROM neo_jobs WHERE id = %s AND worker = %s FOR UPDATE",
                (job_id, worker),
            )
            if await cursor.fetchone() is None:
                return False
            await _write_session(conn, session_id, files, job_id=job_id, now=self._clock())
        return True

    # -- steering (bot/queue/steering_postgres.py) -----------------------------

    async def steer(self, job_id: int, author: str, text: str) -> Steer | None:
        check_steer(author, text)
        async with self._connection() as conn:
            return await steering_postgres.keep(conn, job_id, author, text, self._clock())

    async def take_steers(self, job_id: int) -> builtins.list[Steer]:
        async with self._connection() as conn:
            return await steering_postgres.take(conn, job_id)

    # -- plumbing -------------------------------------------------------------

    async def _open(self) -> None:
        if self._closed:
            raise QueueClosed("the queue is closed")
        if self._opened:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            try:
                # Without waiting: an unreachable server fails the first
                # statement after `connect_timeout`, not the opening.
                await self._pool.open(wait=False)
            except Exception as error:
                raise QueueError(
                    f"the queue database failed: {first_line(error, self._url)}"
                ) from None
            self._opened = True
            if self._listen and self._listener is None:
                self._listener = asyncio.create_task(self._listen_loop(), name="neo-queue-listen")

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Conn]:
        """A pooled connection in autocommit: each statement commits on its own."""
        await self._open()
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as error:
            raise QueueError(
                f"the queue database failed: {first_line(error, self._url)}"
            ) from error

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Conn]:
        """A connection in a transaction, committed on leaving; psycopg errors as QueueError."""
        async with self._connection() as conn:
            try:
                async with conn.transaction():
                    yield conn
            except psycopg.Error as error:
                raise QueueError(
                    f"the queue database failed: {first_line(error, self._url)}"
                ) from error

    async def _notify(self) -> None:
        with contextlib.suppress(QueueError):
            async with self._connection() as conn:
                await _notify(conn)

    async def _read(self, sql: str, params: Sequence[object]) -> builtins.list[Any]:
        async with self._connection() as conn:
            cursor = await conn.execute(sql.encode(), params)
            return await cursor.fetchall()

    async def _listen_loop(self) -> None:
        # A connection of its own, outside the pool: LISTEN holds it for good.
        while True:
            # A notification missed while disconnected is made up for by the
            # workers' poll; reconnecting wakes them once anyway.
            self.queued.set()
            with contextlib.suppress(psycopg.Error, OSError):
                conn = await AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=self._connect_timeout
                )
                async with conn:
                    for channel in (CHANNEL, *_INSERTED):
                        await conn.execute(f'LISTEN "{channel}"'.encode())
                    # From here on nothing is missed: what came meanwhile, look for.
                    self.listening.set()
                    self.queued.set()
                    try:
                        async for _ in conn.notifies():
                            self.queued.set()
                    finally:
                        self.listening.clear()
            await asyncio.sleep(1.0)

    async def close(self) -> None:
        self._closed = True
        await self._run_log.close()
        # Batches already gathered are committed (or fail) before the pool goes.
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._opened:
            self._opened = False
            with contextlib.suppress(Exception):
                await self._pool.close()


async def _write_session(
    conn: Conn, session_id: str, files: SessionFiles, *, job_id: int | None, now: float
) -> None:
    """Replace session `session_id` with `files`, in the caller's transaction."""
    await conn.execute(
        "INSERT INTO neo_sessions (id, transcript, job_id, updated_at) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (id) DO UPDATE SET transcript = excluded.transcript,"
        " job_id = excluded.job_id, updated_at = excluded.updated_at",
        (session_id, files.transcript, job_id, now),
    )
    await conn.execute("DELETE FROM neo_session_children WHERE session_id = %s", (session_id,))
    if files.children:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO neo_session_children (session_id, number, transcript)"
                " VALUES (%s, %s, %s)",
                [(session_id, number, data) for number, data in files.children],
            )


async def _notify(conn: Conn) -> None:
    """Wake every host's listening workers; the poll makes up for a lost one."""
    with contextlib.suppress(psycopg.Error):
        await conn.execute(_NOTIFY.encode())


def _ids(found: Sequence[Sequence[Any]]) -> builtins.list[tuple[bool, int | None, int | None]]:
    return [
        (bool(fresh), None if made is None else int(made), None if old is None else int(old))
        for fresh, made, old in found
    ]


def _request_row(request: JobRequest) -> _Row:
    return (request.lane, request.dedupe_key, request.thread.key, orjson.dumps(request).decode())


async def _end(conn: Conn, job_id: int, state: JobState, reason: str, now: float) -> None:
    """End a running job on the queue's own authority, saying why in its result.

    The caller holds both of the job's rows locked.
    """
    await conn.execute(
        "UPDATE neo_jobs SET result = %s, worker = NULL, lease_expires_at = NULL,"
        " updated_at = %s WHERE id = %s",
        (ended_outcome(state, reason), now, job_id),
    )
    await conn.execute(
        "SELECT procrastinate_finish_job_v1(%s, %s::procrastinate_job_status, false)",
        (job_id, _END_STATUS[state]),
    )


async def _requeue(conn: Conn, job_id: int, now: float, *, counts: bool) -> None:
    """Put a running job back in the queue (the caller holds both its rows locked).

    Unless the attempt `counts`, it is taken back.
    """
    await conn.execute("SELECT procrastinate_retry_job_v2(%s, NULL, NULL, NULL, NULL)", (job_id,))
    await conn.execute(
        "UPDATE neo_jobs SET attempts = CASE WHEN %s THEN attempts"
        " ELSE greatest(attempts - 1, 0) END, worker = NULL, lease_expires_at = NULL,"
        " updated_at = %s WHERE id = %s",
        (counts, now, job_id),
    )
