"""The PostgreSQL queue's steers: its table and its two statements.

`take` is one DELETE ... RETURNING: a row is deleted by one transaction
only, so of two workers taking at once only one gets each steer.
"""

from __future__ import annotations

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from bot.queue.steering import Steer

__all__ = ["MIGRATION", "keep", "take"]

# Schema version 6. Rows live from the steer until the run's worker takes them.
MIGRATION = (
    """CREATE TABLE neo_steers (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id bigint NOT NULL,
        author text NOT NULL,
        text text NOT NULL,
        at double precision NOT NULL
    )""",
    "CREATE INDEX neo_steers_job ON neo_steers (job_id, id)",
)

_KEEP = (
    "INSERT INTO neo_steers (job_id, author, text, at) SELECT id, %s, %s, %s"
    " FROM neo_job_states WHERE id = %s AND kind = 'run' AND state IN ('queued', 'running')"
    " RETURNING id"
)
_TAKE = "DELETE FROM neo_steers WHERE job_id = %s RETURNING id, job_id, author, text, at"


async def keep(
    conn: AsyncConnection[TupleRow], job_id: int, author: str, text: str, now: float
) -> Steer | None:
    """Keep one steer, if `job_id` is a queued or running run."""
    cursor = await conn.execute(_KEEP.encode(), (author, text, now, job_id))
    row = await cursor.fetchone()
    return None if row is None else Steer(int(row[0]), job_id, author, text, now)


async def take(conn: AsyncConnection[TupleRow], job_id: int) -> list[Steer]:
    """Remove and return `job_id`'s steers, oldest first."""
    cursor = await conn.execute(_TAKE.encode(), (job_id,))
    rows = await cursor.fetchall()
    return sorted(
        (Steer(int(i), int(j), str(a), str(t), float(at)) for i, j, a, t, at in rows),
        key=lambda steer: steer.id,
    )
