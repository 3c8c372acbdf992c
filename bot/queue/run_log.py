"""A job's event log, as the queue keeps it: `RunEvent`, the `RunLog` protocol, and
the bound both backends apply (pure).

The worker appends what a job does while it runs (bot/runs/records.py says what
each kind's `data` holds); the run page and `neo jobs logs` read it back, oldest
first, and wait for more. Each job's events are numbered 1, 2, 3... by the store,
with no gap: a reader that resumes after the last number it saw misses nothing
and sees nothing twice.

Bounds: a job keeps at most `limit` events; past it, events are dropped and one
`truncated` event (stored in the place of the first dropped one) says how many of
each kind, its counts kept up to date. `state` events are never dropped: a
reader must always learn how the job ended. Retention drops whole jobs' logs,
never the start of one: `prune_events` removes the logs whose last event is
older than the cut-off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import orjson

__all__ = [
    "MAX_RUN_EVENTS",
    "UNBOUNDED_KINDS",
    "AppendPlan",
    "LogHead",
    "RunEvent",
    "RunLog",
    "RunLogOf",
    "decode_data",
    "encode_data",
    "plan_append",
]

# Events a job keeps (NEO_RUN_MAX_EVENTS): a 200-turn job writes about 2,000.
MAX_RUN_EVENTS = 20_000
# Kinds stored past the bound: few per job, and a reader needs them.
UNBOUNDED_KINDS = frozenset({"state"})
TRUNCATED = "truncated"

NewEvent = tuple[float, str, Mapping[str, object]]


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a job's log, as the queue stores and returns it."""

    job_id: int
    seq: int  # 1, 2, 3... per job, assigned by the store, gap-free: the SSE id
    at: float  # unix time the worker recorded it
    kind: str
    data: dict[str, object]  # a JSON object, already capped; never a secret

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "seq": self.seq,
            "at": self.at,
            "kind": self.kind,
            "data": self.data,
        }


@runtime_checkable
class RunLog(Protocol):
    """Jobs' event logs: appended by the worker, read and followed by anyone."""

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        """Store `events` (at, kind, data) after the job's last, in order, in one
        transaction; return the job's last seq (0 for a job without events)."""
        ...

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> list[RunEvent]:
        """The job's events numbered above `after`, oldest first, at most `limit`."""
        ...

    async def wait_events(self, job_id: int, after: int, timeout: float) -> list[RunEvent]:
        """`events_after`, waiting up to `timeout` seconds for one to exist: returns as
        soon as any does (another process's append included); [] on timeout."""
        ...

    async def prune_events(self, older_than: float) -> int:
        """Remove the logs of jobs whose last event is older than `older_than` (unix
        time); return how many events went."""
        ...


class RunLogOf:
    """A queue's `RunLog` methods, handed to the backend's own log (`_run_log`):
    both queues keep their event logs in a module of their own."""

    _run_log: RunLog

    async def append_events(
        self, job_id: int, events: Sequence[tuple[float, str, dict[str, object]]]
    ) -> int:
        return await self._run_log.append_events(job_id, events)

    async def events_after(self, job_id: int, after: int, *, limit: int = 1000) -> list[RunEvent]:
        return await self._run_log.events_after(job_id, after, limit=limit)

    async def wait_events(self, job_id: int, after: int, timeout: float) -> list[RunEvent]:
        return await self._run_log.wait_events(job_id, after, timeout)

    async def prune_events(self, older_than: float) -> int:
        return await self._run_log.prune_events(older_than)


@dataclass(frozen=True, slots=True)
class LogHead:
    """A job's log as its append finds it: last seq, events counted against the
    bound, and the seq and data of its `truncated` event if it has one."""

    last_seq: int = 0
    kept: int = 0
    truncated_seq: int | None = None
    truncated: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """What one append writes: new rows (seq, at, kind, encoded data), the
    `truncated` event's new data when it already exists, and the new head."""

    rows: list[tuple[int, float, str, str]] = field(default_factory=list)
    truncated_update: str | None = None
    head: LogHead = field(default_factory=LogHead)
    last_at: float | None = None


def encode_data(data: Mapping[str, object]) -> str:
    return orjson.dumps(data).decode()


def decode_data(text: str | bytes) -> dict[str, object]:
    value = orjson.loads(text)
    return value if isinstance(value, dict) else {"value": value}


def plan_append(head: LogHead, events: Sequence[NewEvent], limit: int) -> AppendPlan:
    """Number `events` after `head`, dropping what passes `limit` into one
    `truncated` event. Pure: both backends run it inside their transaction."""
    last_seq, kept = head.last_seq, head.kept
    truncated_seq = head.truncated_seq
    dropped: dict[str, object] | None = None if head.truncated is None else dict(head.truncated)
    rows: list[tuple[int, float, str, str]] = []
    new_truncated_row: int | None = None  # index in rows of a truncated event made now
    last_at: float | None = None
    for at, kind, data in events:
        last_at = at if last_at is None else max(last_at, at)
        if kind in UNBOUNDED_KINDS or (truncated_seq is None and kept < limit - 1):
            last_seq += 1
            if kind not in UNBOUNDED_KINDS:
                kept += 1
            rows.append((last_seq, at, kind, encode_data(data)))
            continue
        if truncated_seq is None:
            last_seq += 1
            truncated_seq = last_seq
            kept += 1
            dropped = {"limit": limit, "dropped": 0, "kinds": {}, "first_at": at}
            new_truncated_row = len(rows)
            rows.append((last_seq, at, TRUNCATED, ""))
        assert dropped is not None
        dropped = _count_dropped(dropped, kind)
    truncated_update: str | None = None
    if dropped is not None:
        encoded = encode_data(dropped)
        if new_truncated_row is not None:
            seq, at, kind, _ = rows[new_truncated_row]
            rows[new_truncated_row] = (seq, at, kind, encoded)
        elif dropped != head.truncated:
            truncated_update = encoded
    return AppendPlan(
        rows=rows,
        truncated_update=truncated_update,
        head=LogHead(last_seq, kept, truncated_seq, dropped),
        last_at=last_at,
    )


def _count_dropped(dropped: Mapping[str, object], kind: str) -> dict[str, object]:
    kinds = dropped.get("kinds")
    counts = dict(kinds) if isinstance(kinds, dict) else {}
    before = counts.get(kind, 0)
    counts[kind] = (before if isinstance(before, int) else 0) + 1
    total = dropped.get("dropped", 0)
    return {**dropped, "dropped": (total if isinstance(total, int) else 0) + 1, "kinds": counts}
