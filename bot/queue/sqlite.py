"""The embedded queue: one SQLite file, WAL, fsync on every commit, group commit.

docs/architecture.md, "The queue", says why an acknowledged delivery
survives `kill -9` and how batches follow the load.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from bot.jobs import Conclusion, Job, JobOutcome, JobRequest, JobState, Lane
from bot.queue import steering_sqlite
from bot.queue.base import (
    DEFAULT_MAX_ATTEMPTS,
    CancelApplied,
    EnqueueResult,
    Heartbeat,
    LeaseLost,
    QueueClosed,
    QueueError,
    QueueSnapshot,
    SpendLine,
    SpendRecord,
    lease_ceiling,
    overran,
    queue_snapshot,
)
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
from bot.queue.run_log_sqlite import SCHEMA as RUN_LOG_SCHEMA
from bot.queue.run_log_sqlite import SqliteRunLog
from bot.queue.steering import Steer, check_steer
from runner.errors import ConfigError

SCHEMA_VERSION = 6

# The background checkpointer's pace, and the WAL size (pages) past which the
# writer checkpoints itself: a backstop should the background fall behind.
CHECKPOINT_EVERY = 1.0
_WRITER_CHECKPOINT_PAGES = 16_384

T = TypeVar("T")
Clock = Callable[[], float]
_Operation = Callable[[sqlite3.Connection], Any]

# Version 1. Every insert updates each index, so there are only the two
# the queries need.
_SCHEMA = (
    """CREATE TABLE deliveries (
        id TEXT PRIMARY KEY,
        received_at REAL NOT NULL
    ) WITHOUT ROWID""",
    # AUTOINCREMENT: a job id is never reused; ids appear in comments and logs.
    # `thread_key` is Thread.key ("owner/name#number", lower case); `request`
    # is JobRequest.to_json().
    """CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        delivery_id TEXT NOT NULL,
        dedupe_key TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        thread_key TEXT NOT NULL,
        request TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        worker TEXT,
        lease_expires_at REAL,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        result TEXT
    )""",
    # claim (the oldest queued job), list by state, counts.
    "CREATE INDEX jobs_state ON jobs (state, id)",
    # "does this thread have a running job?", cancel requests for a thread,
    # and a repository's jobs: its thread keys share the prefix "owner/name#".
    "CREATE INDEX jobs_thread ON jobs (thread_key, state)",
)

# What each later version adds to the one before it: an older database is
# brought up to date on open, in the same transaction as the version bump.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    # Version 2: what finished jobs cost, a row per job and model. `repository`
    # is owner/name in lower case; `at` is unix time. The budgets' queries sum
    # a repository's or an installation's rows from the start of a UTC day.
    2: (
        """CREATE TABLE spend (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            repository TEXT NOT NULL,
            installation_id INTEGER,
            model TEXT NOT NULL,
            at REAL NOT NULL,
            cost_usd REAL NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL
        )""",
        "CREATE INDEX spend_repository ON spend (repository, at)",
        "CREATE INDEX spend_installation ON spend (installation_id, at)",
    ),
    # Version 3: the session a running job holds (`hold_session`); a claim
    # clears it, so only a running job's counts.
    3: (
        "ALTER TABLE jobs ADD COLUMN session_key TEXT",
        "CREATE INDEX jobs_session ON jobs (session_key, state)",
    ),
    # Version 4: a spend record is stored once. A worker that could not tell
    # whether its write committed writes it again, and a retried attempt
    # records what the report on GitHub says the earlier one spent: the same
    # record (job, model, and the moment it was taken), stored once. Copies an
    # earlier version may hold are the same record written twice.
    4: (
        "DELETE FROM spend WHERE id NOT IN (SELECT min(id) FROM spend GROUP BY job_id, model, at)",
        "CREATE UNIQUE INDEX spend_once ON spend (job_id, model, at)",
    ),
    # Version 5: steers waiting for their run's next turn boundary.
    5: steering_sqlite.MIGRATION,
    # Version 6: jobs' event logs (bot/queue/run_log_sqlite.py).
    6: RUN_LOG_SCHEMA,
}

_SPENT_BY_REPOSITORY = "SELECT total(cost_usd) FROM spend WHERE repository = ? AND at >= ?"
_SPENT_BY_INSTALLATION = "SELECT total(cost_usd) FROM spend WHERE installation_id = ? AND at >= ?"
_SPEND_LINES = (
    "SELECT date(at, 'unixepoch') AS day, repository, model, count(DISTINCT job_id),"
    " total(cost_usd), total(input_tokens), total(output_tokens) FROM spend"
    " WHERE at >= ? AND (? IS NULL OR repository = ?)"
    " GROUP BY day, repository, model ORDER BY day DESC, repository, model"
)

_JOB_COLUMNS = (
    " id, request, state, attempts, created_at, updated_at,"
    " worker, lease_expires_at, cancel_requested, result"
)
_SELECT_JOBS = "SELECT" + _JOB_COLUMNS + " FROM jobs"

# The oldest claimable job: a run whose thread has no run going on, or a
# cancel request, which must reach the run it stops.
_CLAIMABLE = (
    " WHERE id = (SELECT j.id FROM jobs AS j WHERE j.state = 'queued'"
    " AND (j.kind = 'cancel' OR NOT EXISTS (SELECT 1 FROM jobs AS r"
    " WHERE r.thread_key = j.thread_key AND r.state = 'running' AND r.kind = 'run'))"
)
_CLAIM_SET = (
    "UPDATE jobs SET state = 'running', attempts = attempts + 1, worker = ?,"
    " lease_expires_at = ?, updated_at = ?, session_key = NULL"
)
_CLAIM_END = " ORDER BY j.id LIMIT 1) RETURNING" + _JOB_COLUMNS
_CLAIM = _CLAIM_SET + _CLAIMABLE + _CLAIM_END
_CLAIM_KIND = _CLAIM_SET + _CLAIMABLE + " AND j.kind = ?" + _CLAIM_END


@dataclass(frozen=True, slots=True)
class WriteStats:
    """How well group commit is batching: writes per commit = writes / commits."""

    commits: int
    writes: int


class SqliteQueue(RunLogOf):
    """The `JobQueue` on one SQLite file. Open it with `open_queue`.

    `first_job_id` is the id of the first job of a database this opening
    creates (`neo action` numbers its one job after the workflow run); an
    existing database goes on from its last id.
    """

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock = time.time,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_batch: int = 1024,
        busy_timeout: float = 10.0,
        checkpoint_every: float = CHECKPOINT_EVERY,
        create: bool = True,
        first_job_id: int = 1,
        job_timeout: float | None = None,
        max_run_events: int = MAX_RUN_EVENTS,
    ) -> None:
        if not create and not path.exists():
            raise ConfigError(f"no queue database at {path}")
        if first_job_id < 1:
            raise ValueError("first_job_id must be at least 1")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            # FileExistsError: the directory's name is taken by a file.
            reason = "Not a directory" if isinstance(error, FileExistsError) else error.strerror
            raise ConfigError(f"cannot open the queue database {path}: {reason}") from None
        self.path = path
        self._clock = clock
        self._max_attempts = max_attempts
        self._job_timeout = job_timeout
        self._ceiling = lease_ceiling(job_timeout)
        writer = _connect(path, busy_timeout)
        try:
            _prepare(writer, path, first_job_id)
            reader = _connect(path, busy_timeout)
        except BaseException:
            writer.close()
            raise
        reader.execute("PRAGMA query_only = ON")
        self._file = _identity(path)
        self._reader = reader
        self._read_lock = threading.Lock()
        writer.execute(f"PRAGMA wal_autocheckpoint = {_WRITER_CHECKPOINT_PAGES}")
        self._checkpointer = _Checkpointer(_connect(path, busy_timeout), checkpoint_every)
        self._writer = _GroupCommitter(writer, max_batch)
        self._run_log = SqliteRunLog(self._write, self._read, limit=max_run_events)

    @property
    def stats(self) -> WriteStats:
        return self._writer.stats()

    async def __aenter__(self) -> SqliteQueue:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- writes ---------------------------------------------------------------

    async def enqueue(self, delivery_id: str, requests: Sequence[JobRequest]) -> EnqueueResult:
        # Serialise here, on the caller's side: a bad request fails alone,
        # before it reaches the writer, and the writer does less per batch.
        rows = [_request_row(request) for request in requests]

        def operation(conn: sqlite3.Connection) -> EnqueueResult:
            now = self._clock()
            inserted = conn.execute(
                "INSERT INTO deliveries (id, received_at) VALUES (?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (delivery_id, now),
            )
            if inserted.rowcount == 0:
                return EnqueueResult(duplicate=True)
            job_ids: list[int] = []
            existing: list[int] = []
            for row in rows:
                job_id = _insert_job(conn, delivery_id, row, now)
                if job_id is None:
                    (job_id,) = conn.execute(
                        "SELECT id FROM jobs WHERE dedupe_key = ?", (row.dedupe_key,)
                    ).fetchone()
                    existing.append(job_id)
                job_ids.append(job_id)
            return EnqueueResult(duplicate=False, job_ids=tuple(job_ids), existing=tuple(existing))

        return await self._write(operation)

    async def claim(self, worker: str, lease: float, *, only: Lane | None = None) -> Job | None:
        sql = _CLAIM if only is None else _CLAIM_KIND
        kind: tuple[str, ...] = () if only is None else (only,)

        def operation(conn: sqlite3.Connection) -> Job | None:
            now = self._clock()
            expires = now + min(lease, self._ceiling)
            row = conn.execute(sql, (worker, expires, now, *kind)).fetchone()
            return None if row is None else job_from_row(row)

        return await self._write(operation)

    async def apply_cancel(self, request_id: int) -> CancelApplied:
        def operation(conn: sqlite3.Connection) -> CancelApplied:
            row = conn.execute(
                "SELECT thread_key, request FROM jobs WHERE id = ? AND kind = 'cancel'",
                (request_id,),
            ).fetchone()
            if row is None:
                raise QueueError(f"job {request_id} is not a cancel request")
            thread_key, request = row
            author = json.loads(request).get("author") or "someone"
            now = self._clock()
            reason = f"cancelled: @{author} asked to stop (job {request_id})"
            cancelled = conn.execute(
                "UPDATE jobs SET state = 'cancelled', result = ?, updated_at = ?"
                " WHERE thread_key = ? AND kind = 'run' AND state = 'queued' AND id < ?"
                " RETURNING id",
                (
                    encode_outcome(JobOutcome(conclusion=Conclusion.CANCELLED, error=reason)),
                    now,
                    thread_key,
                    request_id,
                ),
            ).fetchall()
            requested = conn.execute(
                "UPDATE jobs SET cancel_requested = 1"
                " WHERE thread_key = ? AND kind = 'run' AND state = 'running' AND id < ?"
                " RETURNING id",
                (thread_key, request_id),
            ).fetchall()
            applied = CancelApplied(
                cancelled=tuple(sorted(job_id for (job_id,) in cancelled)),
                cancel_requested=tuple(sorted(job_id for (job_id,) in requested)),
            )
            # Written now, not when the request finishes: the stopped run looks
            # here for who stopped it as soon as its heartbeat tells it to.
            conn.execute(
                "UPDATE jobs SET result = ?, updated_at = ? WHERE id = ?",
                (encode_outcome(stopped_outcome(applied)), now, request_id),
            )
            return applied

        return await self._write(operation)

    async def heartbeat(self, job_id: int, worker: str, lease: float) -> Heartbeat:
        def operation(conn: sqlite3.Connection) -> Heartbeat:
            now = self._clock()
            row = conn.execute(
                "UPDATE jobs SET lease_expires_at = min(?, updated_at + ?)"
                " WHERE id = ? AND state = 'running' AND worker = ? AND ? < updated_at + ?"
                " RETURNING cancel_requested",
                (now + lease, self._ceiling, job_id, worker, now, self._ceiling),
            ).fetchone()
            if row is None:
                return Heartbeat(lease_lost=True)
            return Heartbeat(lease_lost=False, cancel_requested=bool(row[0]))

        return await self._write(operation)

    async def finish(self, job_id: int, worker: str, outcome: JobOutcome) -> None:
        state = outcome.conclusion.state
        encoded = encode_outcome(outcome)

        def operation(conn: sqlite3.Connection) -> None:
            updated = conn.execute(
                "UPDATE jobs SET state = ?, result = ?, updated_at = ?,"
                " worker = NULL, lease_expires_at = NULL"
                " WHERE id = ? AND state = 'running' AND worker = ?",
                (state.value, encoded, self._clock(), job_id, worker),
            )
            if updated.rowcount == 0:
                raise LeaseLost(f"job {job_id} is no longer running under {worker}")

        await self._write(operation)

    async def hold_session(self, job_id: int, worker: str, session: str) -> bool:
        def operation(conn: sqlite3.Connection) -> bool:
            # One writer at a time: the check and the mark cannot interleave.
            held = conn.execute(
                "SELECT 1 FROM jobs WHERE session_key = ? AND state = 'running' AND id != ?",
                (session, job_id),
            ).fetchone()
            if held is not None:
                return False
            marked = conn.execute(
                "UPDATE jobs SET session_key = ? WHERE id = ? AND state = 'running' AND worker = ?",
                (session, job_id, worker),
            )
            if marked.rowcount == 0:
                raise LeaseLost(f"job {job_id} is no longer running under {worker}")
            return True

        return bool(await self._write(operation))

    async def release(self, job_id: int, worker: str) -> None:
        def operation(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT cancel_requested FROM jobs"
                " WHERE id = ? AND state = 'running' AND worker = ?",
                (job_id, worker),
            ).fetchone()
            if row is None:
                return
            if row[0]:
                _end(
                    conn,
                    job_id,
                    JobState.CANCELLED,
                    "cancelled before its worker finished it",
                    self._clock(),
                )
                return
            # A graceful shutdown is not a failed attempt.
            conn.execute(
                "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0),"
                " worker = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?",
                (self._clock(), job_id),
            )

        await self._write(operation)

    async def requeue_expired(self) -> builtins.list[int]:
        def operation(conn: sqlite3.Connection) -> list[int]:
            now = self._clock()
            expired = conn.execute(
                "SELECT id, attempts, cancel_requested, updated_at, lease_expires_at FROM jobs"
                " WHERE state = 'running' AND lease_expires_at < ? ORDER BY id",
                (now,),
            ).fetchall()
            for job_id, attempts, cancel_requested, claimed_at, lease_end in expired:
                if cancel_requested:
                    _end(
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
                    _end(conn, job_id, JobState.FAILED, reason, now)
                elif attempts >= self._max_attempts:
                    _end(
                        conn,
                        job_id,
                        JobState.FAILED,
                        f"gave up after {attempts} attempts: each time the worker's lease"
                        " expired before it finished",
                        now,
                    )
                else:
                    conn.execute(
                        "UPDATE jobs SET state = 'queued', worker = NULL,"
                        " lease_expires_at = NULL, updated_at = ? WHERE id = ?",
                        (now, job_id),
                    )
            return [job_id for job_id, *_ in expired]

        return await self._write(operation)

    async def cancel(self, job_id: int, *, by: str | None = None) -> bool:
        def operation(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return False
            if row[0] == JobState.QUEUED:
                _end(
                    conn,
                    job_id,
                    JobState.CANCELLED,
                    "cancelled on request before it ran",
                    self._clock(),
                )
                if by is not None:
                    named = named_stop(by, ran=False)
                    conn.execute("UPDATE jobs SET result = ? WHERE id = ?", (named, job_id))
                return True
            if row[0] == JobState.RUNNING:
                conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))
                if by is not None:
                    named = named_stop(by, ran=True)
                    conn.execute("UPDATE jobs SET result = ? WHERE id = ?", (named, job_id))
                return True
            return False

        return await self._write(operation)

    async def retry(self, job_id: int) -> bool:
        def operation(conn: sqlite3.Connection) -> bool:
            updated = conn.execute(
                "UPDATE jobs SET state = 'queued', attempts = 0, worker = NULL,"
                " lease_expires_at = NULL, cancel_requested = 0, result = NULL, updated_at = ?"
                " WHERE id = ? AND kind = 'run' AND state IN ('failed', 'cancelled')",
                (self._clock(), job_id),
            )
            return updated.rowcount == 1

        return await self._write(operation)

    async def _write(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        return await self._writer.submit(operation)

    # -- reads ----------------------------------------------------------------

    async def get(self, job_id: int) -> Job | None:
        rows = await self._read(_SELECT_JOBS + " WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    async def list(
        self,
        *,
        state: JobState | None = None,
        repository: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        clause, params = list_filter(state, repository, "?")
        rows = await self._read(
            _SELECT_JOBS + clause + " ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [job_from_row(row) for row in rows]

    async def counts(self) -> dict[JobState, int]:
        rows = await self._read("SELECT state, count(*) FROM jobs GROUP BY state", ())
        counts = dict.fromkeys(JobState, 0)
        for state, count in rows:
            counts[JobState(state)] = count
        return counts

    async def snapshot(self) -> QueueSnapshot:
        rows = await self._read(
            "SELECT state, count(*), min(updated_at) FROM jobs GROUP BY state", ()
        )
        return queue_snapshot(rows, self._clock())

    async def ping(self) -> None:
        await self._read("SELECT 1 FROM jobs LIMIT 1", ())
        # An open file answers even once it was deleted or replaced (a
        # volume remounted, a data directory wiped): writes would go to a
        # file no other process sees.
        found = await asyncio.to_thread(_identity, self.path)
        if found != self._file:
            raise QueueError("the queue database file was removed or replaced")

    async def last_dedupe_key(self, prefix: str) -> str | None:
        if not prefix:
            raise ValueError("a dedupe key prefix must not be empty")
        # The keys that start with `prefix` sort from it up to (not including)
        # it with its last character bumped: a seek in the keys' unique index.
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = await self._read(
            "SELECT dedupe_key FROM jobs WHERE dedupe_key >= ? AND dedupe_key < ?"
            " ORDER BY dedupe_key DESC LIMIT 1",
            (prefix, end),
        )
        return str(rows[0][0]) if rows else None

    # -- spend ----------------------------------------------------------------

    async def record_spend(self, records: Sequence[SpendRecord]) -> None:
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

        def operation(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO spend (job_id, repository, installation_id, model, at, cost_usd,"
                " input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (job_id, model, at) DO NOTHING",
                rows,
            )

        if rows:
            await self._write(operation)

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
        # NULL matches every repository: one statement, no text built at run time.
        name = None if repository is None else repository.lower()
        rows = await self._read(_SPEND_LINES, (since, name, name))
        return spend_lines(rows)

    # -- steering (bot/queue/steering_sqlite.py) -------------------------------

    async def steer(self, job_id: int, author: str, text: str) -> Steer | None:
        check_steer(author, text)
        return await self._write(steering_sqlite.keep(job_id, author, text, self._clock()))

    async def take_steers(self, job_id: int) -> builtins.list[Steer]:
        if not (await self._read(steering_sqlite.ANY_PENDING, (job_id,)))[0][0]:
            return []
        return await self._write(steering_sqlite.take(job_id))

    async def _read(self, sql: str, params: Sequence[object]) -> builtins.list[Any]:
        def query() -> list[Any]:
            with self._read_lock:
                try:
                    return self._reader.execute(sql, params).fetchall()
                except sqlite3.ProgrammingError as error:
                    raise QueueClosed("the queue is closed") from error
                except sqlite3.Error as error:
                    raise QueueError(f"the queue database failed: {error}") from error

        return await asyncio.to_thread(query)

    # -- lifetime -------------------------------------------------------------

    async def close(self) -> None:
        await asyncio.to_thread(self.close_sync)

    def close_sync(self) -> None:
        """Close from synchronous code: pending writes are committed first."""
        self._writer.close()
        self._checkpointer.close()
        with self._read_lock:
            self._reader.close()


@dataclass(frozen=True, slots=True)
class _RequestRow:
    kind: str
    dedupe_key: str
    thread_key: str
    request: str


def _request_row(request: JobRequest) -> _RequestRow:
    return _RequestRow(
        kind=request.lane,
        dedupe_key=request.dedupe_key,
        thread_key=request.thread.key,
        # orjson serialises the dataclass itself: the same object as
        # `request.to_json()`, without building it first (a tenth of the cost).
        request=orjson.dumps(request).decode(),
    )


def _insert_job(
    conn: sqlite3.Connection, delivery_id: str, row: _RequestRow, now: float
) -> int | None:
    """The new job's id, or None when its dedupe key is already stored."""
    inserted = conn.execute(
        "INSERT INTO jobs (delivery_id, dedupe_key, kind, thread_key, request,"
        " state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (dedupe_key) DO NOTHING RETURNING id",
        (
            delivery_id,
            row.dedupe_key,
            row.kind,
            row.thread_key,
            row.request,
            JobState.QUEUED.value,
            now,
            now,
        ),
    ).fetchone()
    return None if inserted is None else int(inserted[0])


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at `path` (device, inode), or None when there is none."""
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _end(conn: sqlite3.Connection, job_id: int, state: JobState, reason: str, now: float) -> None:
    """Finish a job on the queue's own authority, saying why in its result."""
    conn.execute(
        "UPDATE jobs SET state = ?, result = ?, worker = NULL, lease_expires_at = NULL,"
        " updated_at = ? WHERE id = ?",
        (state.value, ended_outcome(state, reason), now, job_id),
    )


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    try:
        # isolation_level=None: we write BEGIN/COMMIT ourselves. `timeout` is
        # SQLite's busy timeout: how long to wait for another process's write.
        conn = sqlite3.connect(
            path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA synchronous = FULL")
    except sqlite3.Error as error:
        raise ConfigError(f"cannot open the queue database {path}: {error}") from error
    return conn


def _prepare(conn: sqlite3.Connection, path: Path, first_job_id: int = 1) -> None:
    """WAL mode and the schema, created on first open, its jobs numbered from `first_job_id`."""
    try:
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":
            raise ConfigError(f"the queue database {path} cannot use WAL (journal mode {mode})")
        conn.execute("BEGIN IMMEDIATE")
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"the queue database {path} has schema version {version};"
                    f" this Neo knows up to {SCHEMA_VERSION}"
                )
            if version == 0:
                for statement in _SCHEMA:
                    conn.execute(statement)
                if first_job_id > 1:
                    # AUTOINCREMENT hands out the id after the table's sqlite_sequence row.
                    conn.execute(
                        "INSERT INTO sqlite_sequence (name, seq) VALUES ('jobs', ?)",
                        (first_job_id - 1,),
                    )
                version = 1
            for later in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[later]:
                    conn.execute(statement)
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as error:
        raise ConfigError(f"cannot open the queue database {path}: {error}") from error


@dataclass(slots=True)
class _Pending:
    """One caller's write: what to run, and where its answer goes."""

    operation: _Operation
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    ok: bool = False
    value: Any = None


class _GroupCommitter:
    """The writer thread: many callers' operations, one transaction and one fsync per batch."""

    def __init__(self, conn: sqlite3.Connection, max_batch: int) -> None:
        self._conn = conn
        self._max_batch = max_batch
        self._inbox: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._commits = 0
        self._writes = 0
        # A daemon: a process that exits without closing loses only writes
        # nobody was told about.
        self._thread = threading.Thread(target=self._run, name="neo-queue-writer", daemon=True)
        self._thread.start()

    def submit(self, operation: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise QueueClosed("the queue is closed")
            self._inbox.put(_Pending(operation, loop, future))
        return future

    def stats(self) -> WriteStats:
        return WriteStats(commits=self._commits, writes=self._writes)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._inbox.put(None)
        self._thread.join()

    def _run(self) -> None:
        try:
            while True:
                item = self._inbox.get()
                if item is None:
                    break
                batch = [item]
                stopping = False
                while len(batch) < self._max_batch:
                    try:
                        item = self._inbox.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stopping = True
                        break
                    batch.append(item)
                self._commit(batch)
                if stopping:
                    break
        finally:
            # Whatever stopped us, no caller waits forever.
            with self._lock:
                self._closed = True
            left: list[_Pending] = []
            while True:
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item.value = QueueClosed("the queue is closed")
                    left.append(item)
            _deliver(left)
            self._conn.close()

    def _commit(self, batch: list[_Pending]) -> None:
        # A caller that gave up (its task was cancelled) before we started is
        # skipped: it was never told anything. Reading `cancelled()` from this
        # thread races benignly: `_resolve` checks again on the caller's loop.
        live = [pending for pending in batch if not pending.future.cancelled()]
        if not live:
            return
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            if not self._run_all(live):
                # One operation failed: start the batch again, each operation
                # in a savepoint of its own, so it alone is undone.
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                self._run_each(live)
            conn.execute("COMMIT")
        except Exception as error:
            # Nothing in this batch is durable: every caller hears so.
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            failure = QueueError(f"the queue database failed: {error}")
            for pending in live:
                pending.ok, pending.value = False, failure
        else:
            self._commits += 1
            self._writes += len(live)
        _deliver(live)

    def _run_all(self, batch: list[_Pending]) -> bool:
        """Run every operation straight, no savepoints; False if one raised.

        The common case, and the cheap one: two statements fewer per write,
        and each statement is a round of the GIL between this thread and the
        event loop's.
        """
        for pending in batch:
            try:
                pending.value = pending.operation(self._conn)
            except Exception:
                return False
            pending.ok = True
        return True

    def _run_each(self, batch: list[_Pending]) -> None:
        conn = self._conn
        for pending in batch:
            conn.execute("SAVEPOINT operation")
            try:
                pending.value = pending.operation(conn)
            except Exception as error:
                conn.execute("ROLLBACK TO operation")
                conn.execute("RELEASE operation")
                if isinstance(error, sqlite3.Error):
                    error = QueueError(f"the queue database failed: {error}")
                pending.ok, pending.value = False, error
            else:
                conn.execute("RELEASE operation")
                pending.ok = True


class _Checkpointer:
    """Copies the WAL into the database file from a thread of its own.

    SQLite's automatic checkpoint runs inside the commit that crosses its
    threshold: that commit, and every caller waiting on it, pays for writing
    back and fsyncing megabytes of pages. A passive checkpoint here never
    blocks the writer, so commits stay short; the writer checkpoints itself
    only should this fall far behind.
    """

    def __init__(self, conn: sqlite3.Connection, every: float) -> None:
        self._conn = conn
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neo-queue-checkpoint", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        # Leave a short WAL behind for the next start.
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._conn.close()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            # A busy or failing checkpoint is retried on the next round; the
            # writer's own backstop keeps the WAL bounded meanwhile.
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")


def _deliver(done: list[_Pending]) -> None:
    """Wake each event loop once per batch, not once per caller."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
    for pending in done:
        by_loop.setdefault(pending.loop, []).append(pending)
    for loop, answers in by_loop.items():
        # A closed loop has nobody left waiting.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve, answers)


def _resolve(answers: list[_Pending]) -> None:
    for pending in answers:
        if pending.future.done():  # cancelled meanwhile
            continue
        if pending.ok:
            pending.future.set_result(pending.value)
        else:
            pending.future.set_exception(pending.value)
