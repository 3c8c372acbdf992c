"""The SQLite queue's steers: its table, and the operations its writer runs.

`SqliteQueue.steer` and `take_steers` hand these to its group-committing
writer; `ANY_PENDING` is the read a turn boundary costs when nobody steered.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from bot.queue.steering import Steer

__all__ = ["ANY_PENDING", "MIGRATION", "keep", "take"]

# Schema version 5. Rows live from the steer until the run's worker takes them.
MIGRATION = (
    """CREATE TABLE steers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id INTEGER NOT NULL,
        author TEXT NOT NULL,
        text TEXT NOT NULL,
        at REAL NOT NULL
    )""",
    "CREATE INDEX steers_job ON steers (job_id, id)",
)

# Run through the reader: nearly every turn boundary finds nothing, and then
# costs no write transaction (no fsync).
ANY_PENDING = "SELECT EXISTS (SELECT 1 FROM steers WHERE job_id = ?)"


def keep(
    job_id: int, author: str, text: str, now: float
) -> Callable[[sqlite3.Connection], Steer | None]:
    """The write that keeps one steer, if `job_id` is a queued or running run."""

    def operation(conn: sqlite3.Connection) -> Steer | None:
        row = conn.execute(
            "INSERT INTO steers (job_id, author, text, at) SELECT id, ?, ?, ? FROM jobs"
            " WHERE id = ? AND kind = 'run' AND state IN ('queued', 'running') RETURNING id",
            (author, text, now, job_id),
        ).fetchone()
        return None if row is None else Steer(int(row[0]), job_id, author, text, now)

    return operation


def take(job_id: int) -> Callable[[sqlite3.Connection], list[Steer]]:
    """The write that removes and returns `job_id`'s steers, oldest first.

    One writer at a time: two takers never both see a row.
    """

    def operation(conn: sqlite3.Connection) -> list[Steer]:
        rows = conn.execute(
            "DELETE FROM steers WHERE job_id = ? RETURNING id, job_id, author, text, at",
            (job_id,),
        ).fetchall()
        return sorted(
            (Steer(int(i), int(j), str(a), str(t), float(at)) for i, j, a, t, at in rows),
            key=lambda steer: steer.id,
        )

    return operation
