"""Event records for the run page's tests: as a job's worker writes them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Rec:
    """A record as the queue returns one (bot.queue's RunEvent has these fields)."""

    seq: int
    kind: str
    data: dict[str, object] = field(default_factory=dict)
    at: float = 1_000.0
    job_id: int = 1


def numbered(*records: tuple[str, dict[str, object]], job_id: int = 1) -> list[Rec]:
    return [
        Rec(seq, kind, data, 1_000.0 + seq, job_id)
        for seq, (kind, data) in enumerate(records, start=1)
    ]


def in_subagent(agent: str, kind: str, data: dict[str, object]) -> tuple[str, dict[str, object]]:
    return "subagent", {"agent": agent, "event": {"kind": kind, "data": data}}
