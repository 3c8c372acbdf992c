"""`neo db copy`: move a SQLite queue's work and thread sessions into a PostgreSQL one.

Every job is carried with its id, dedupe key and delivery, so a redelivery
after the move still dedupes and nothing finished runs again; a job a dead
service left running is the new hosts' to retry once its lease expires, as
any dead worker's. The spend records and the
session files of the queue's data directory go too, all in one transaction
into a migrated database that has no jobs yet. Messages never hold a URL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bot.jobs import JobState
from bot.queue.base import SessionFiles
from bot.queue.pg_schema import SCHEMA_VERSION, connect_error, first_line, version
from bot.queue.postgres import STATUS_OF_STATE
from bot.queue.rows import job_from_row
from bot.worker.sessions import read_session_files
from runner.errors import ConfigError
from runner.session import SessionError, SessionStore

__all__ = ["Copied", "copy_queue", "session_ids"]

# The SQLite queue's columns and PostgreSQL's have the same names and meanings.
_READ_JOBS = (
    "SELECT id, delivery_id, dedupe_key, kind, thread_key, request, state, attempts,"
    " created_at, updated_at, worker, lease_expires_at, cancel_requested, result"
    " FROM jobs ORDER BY id"
)
_READ_SPEND = (
    "SELECT job_id, repository, installation_id, model, at, cost_usd, input_tokens,"
    " output_tokens FROM spend ORDER BY id"
)
# Both of a job's rows: Neo's, and procrastinate's with its state (as
# bot/queue/postgres.py reads them).
_WRITE_JOB = (
    "WITH job AS (INSERT INTO neo_jobs (id, delivery_id, dedupe_key, kind, thread_key, request,"
    " attempts, created_at, updated_at, worker, lease_expires_at, result)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id, kind, thread_key)"
    " INSERT INTO procrastinate_jobs (id, queue_name, task_name, lock, status, abort_requested)"
    " SELECT id, 'neo_' || kind, 'neo.' || kind, CASE WHEN kind = 'run' THEN thread_key END,"
    " %s::procrastinate_job_status, %s FROM job"
)
_WRITE_SPEND = (
    "INSERT INTO neo_spend (job_id, repository, installation_id, model, at, cost_usd,"
    " input_tokens, output_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
# New jobs take ids after the copied ones: ids appear in comments and logs.
_NEXT_ID = "SELECT setval('procrastinate_jobs_id_seq', (SELECT max(id) FROM procrastinate_jobs))"


@dataclass(frozen=True, slots=True)
class Copied:
    """What `copy_queue` wrote into the destination."""

    queued: int
    running: int  # left running by a service that died: retried after their lease
    finished: int  # ended jobs, kept so their dedupe keys hold
    deliveries: int
    sessions: int
    spend: int

    def summary(self) -> str:
        return (
            f"copied {self.queued} queued jobs, {self.running} left running (retried once their"
            f" lease expires), {self.finished} finished jobs (their dedupe keys),"
            f" {self.deliveries} deliveries, {self.sessions} thread sessions"
            f" and {self.spend} spend records"
        )


@dataclass(frozen=True, slots=True)
class _Source:
    deliveries: list[tuple[Any, ...]]
    jobs: list[tuple[Any, ...]]
    spend: list[tuple[Any, ...]]


def session_ids(data_dir: Path) -> list[str]:
    """The ids of the sessions saved under `data_dir`, sorted; unsafe names are not sessions."""
    try:
        entries = list((data_dir / "sessions").iterdir())
    except FileNotFoundError:
        return []
    store = SessionStore(data_dir)
    found = []
    for entry in entries:
        if entry.suffix != ".jsonl" or not entry.is_file():
            continue
        try:
            store.path(entry.stem)
        except SessionError:
            continue
        found.append(entry.stem)
    return sorted(found)


def copy_queue(source: Path, data_dir: Path, dest_url: str, *, dest: str = "DEST") -> Copied:
    """Copy the SQLite queue `source` and `data_dir`'s sessions into `dest_url`.

    `dest` names where the URL came from, in messages.

    Raises ConfigError (one line, no URL) and writes nothing when the
    destination is not migrated or already has jobs, or either side fails.
    """
    read = _read_source(source)
    sessions = [(sid, _session(data_dir, sid)) for sid in session_ids(data_dir)]
    try:
        # A URL libpq cannot parse fails here too, as a ProgrammingError.
        conn = psycopg.connect(dest_url, connect_timeout=10)
    except psycopg.Error as error:
        raise connect_error(error, dest, dest_url) from None
    try:
        with conn:
            _write(conn, read, [(sid, files) for sid, files in sessions if files is not None], dest)
    except psycopg.OperationalError as error:
        raise connect_error(error, dest, dest_url) from None
    except psycopg.Error as error:
        raise ConfigError(
            f"the copy into the destination failed: {first_line(error, dest_url)} ({dest})"
        ) from None
    queued = sum(1 for row in read.jobs if row[6] == "queued")
    running = sum(1 for row in read.jobs if row[6] == "running")
    return Copied(
        queued=queued,
        running=running,
        finished=len(read.jobs) - queued - running,
        deliveries=len(read.deliveries),
        sessions=sum(1 for _, files in sessions if files is not None),
        spend=len(read.spend),
    )


def _session(data_dir: Path, session_id: str) -> SessionFiles | None:
    try:
        return read_session_files(data_dir, session_id)
    except SessionError as error:
        raise ConfigError(str(error)) from None


def _read_source(path: Path) -> _Source:
    if not path.is_file():
        raise ConfigError(f"no queue database at {path} (SOURCE)")
    try:
        # Read-only, and in one transaction: one consistent picture of the queue.
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            conn.execute("BEGIN")
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if "jobs" not in tables or "deliveries" not in tables:
                raise ConfigError(f"{path} is not a Neo queue database (SOURCE)")
            deliveries = conn.execute("SELECT id, received_at FROM deliveries").fetchall()
            jobs = conn.execute(_READ_JOBS).fetchall()
            spend = conn.execute(_READ_SPEND).fetchall() if "spend" in tables else []
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise ConfigError(f"cannot read the queue database {path}: {error} (SOURCE)") from None
    for row in jobs:
        _check_job(path, row)
    return _Source(deliveries=deliveries, jobs=jobs, spend=spend)


def _check_job(path: Path, row: Sequence[Any]) -> None:
    """Raise ConfigError unless the PostgreSQL queue will read the job `row`
    back, as `neo jobs` and the workers do: a row it cannot read would be
    copied only to break them there."""
    states = {state.value for state in JobState}
    problem = None
    if row[6] not in states:
        problem = f"has the state {row[6]!r}, which this Neo does not know"
    else:
        try:
            job_from_row((row[0], row[5], *row[6:]))
        except (ValueError, TypeError, KeyError, AttributeError):
            problem = "has a request or a result this Neo cannot read"
    if problem is not None:
        raise ConfigError(f"job {row[0]} in {path} {problem}; nothing was copied (SOURCE)")


def _write(
    conn: psycopg.Connection[tuple[Any, ...]],
    read: _Source,
    sessions: Sequence[tuple[str, SessionFiles]],
    dest: str,
) -> None:
    with conn.transaction():
        found = version(conn)
        if found != SCHEMA_VERSION:
            raise ConfigError(
                f"the destination has schema version {found}; this Neo needs {SCHEMA_VERSION}:"
                f" run `neo db migrate` on it first ({dest})"
            )
        # No intake may queue a job between the check and the copy.
        conn.execute("LOCK TABLE neo_jobs IN EXCLUSIVE MODE")
        if conn.execute("SELECT EXISTS (SELECT 1 FROM neo_jobs)").fetchone() == (True,):
            raise ConfigError(
                "the destination already has jobs;"
                f" `neo db copy` moves a queue into an empty one ({dest})"
            )
        _copy_rows(conn, read, sessions)


def _copy_rows(
    conn: psycopg.Connection[tuple[Any, ...]],
    read: _Source,
    sessions: Sequence[tuple[str, SessionFiles]],
) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO neo_deliveries (id, received_at) VALUES (%s, %s)"
            " ON CONFLICT (id) DO NOTHING",
            read.deliveries,
        )
        cursor.executemany(
            _WRITE_JOB,
            [_job_row(row) for row in read.jobs],
        )
        cursor.executemany(
            _WRITE_SPEND,
            read.spend,
        )
        for session_id, files in sessions:
            cursor.execute(
                "INSERT INTO neo_sessions (id, transcript, job_id, updated_at)"
                " VALUES (%s, %s, NULL, extract(epoch FROM now()))"
                " ON CONFLICT (id) DO UPDATE SET transcript = excluded.transcript,"
                " job_id = NULL, updated_at = excluded.updated_at",
                (session_id, files.transcript),
            )
            cursor.execute("DELETE FROM neo_session_children WHERE session_id = %s", (session_id,))
            cursor.executemany(
                "INSERT INTO neo_session_children (session_id, number, transcript)"
                " VALUES (%s, %s, %s)",
                [(session_id, number, data) for number, data in files.children],
            )
    if read.jobs:
        conn.execute(_NEXT_ID)
        # procrastinate's fetch is planned from the tables' statistics: without
        # them, until autovacuum's first pass, each claim would sort every
        # copied job still waiting.
        conn.execute("ANALYZE neo_jobs, procrastinate_jobs")


def _job_row(row: Sequence[Any]) -> tuple[Any, ...]:
    (job_id, delivery, key, kind, thread, request, state, attempts, created, updated) = row[:10]
    worker, lease, cancel_requested, result = row[10:]
    running = state == JobState.RUNNING
    return (
        *(job_id, delivery, key, kind, thread, request, attempts, created, updated),
        # Set exactly while a job runs, which is what the PostgreSQL queue reads.
        worker if running else None,
        lease if running else None,
        result,
        STATUS_OF_STATE[JobState(state)],
        bool(cancel_requested) and running,  # SQLite keeps booleans as integers
    )
