"""A job as both queue backends store it and read it back. Pure.

The SQLite and PostgreSQL queues keep the same columns in the same order
(`id, request, state, attempts, created_at, updated_at, worker,
lease_expires_at, cancel_requested, result`) and the same JSON in them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.jobs import Conclusion, Job, JobOutcome, JobRequest, JobState
from bot.queue.base import CancelApplied, SpendLine

__all__ = [
    "encode_outcome",
    "ended_outcome",
    "job_from_row",
    "list_filter",
    "named_stop",
    "spend_lines",
    "spent_by",
    "stopped_outcome",
]


def encode_outcome(outcome: JobOutcome) -> str:
    """The `result` column's text."""
    return json.dumps(outcome.to_json())


def ended_outcome(state: JobState, reason: str) -> str:
    """The `result` of a job the queue itself ended (cancelled, or failed for `reason`)."""
    conclusion = Conclusion.CANCELLED if state is JobState.CANCELLED else Conclusion.FAILED
    return encode_outcome(JobOutcome(conclusion=conclusion, error=reason))


def named_stop(by: str, *, ran: bool) -> str:
    """The `result` of a run `by` stopped by its id (the run page's Stop): queued,
    its end; running, who asked, for the report its worker writes as it stops."""
    reason = f"cancelled: @{by} asked to stop" + ("" if ran else " before it ran")
    return encode_outcome(
        JobOutcome(conclusion=Conclusion.CANCELLED, error=reason, cancelled_by=by)
    )


def stopped_outcome(applied: CancelApplied) -> JobOutcome:
    """A stop request's outcome: what it cancelled and what it asked to stop."""
    return JobOutcome(
        conclusion=Conclusion.STOPPED,
        cancelled=applied.cancelled,
        cancel_requested=applied.cancel_requested,
    )


def job_from_row(row: Sequence[Any]) -> Job:
    """A `Job` from its columns, in the order above."""
    (
        job_id,
        request,
        state,
        attempts,
        created_at,
        updated_at,
        worker,
        lease_expires_at,
        cancel_requested,
        result,
    ) = row
    job_state = JobState(state)
    return Job(
        id=int(job_id),
        request=JobRequest.from_json(json.loads(request)),
        state=job_state,
        attempts=int(attempts),
        created_at=float(created_at),
        updated_at=float(updated_at),
        worker=worker,
        lease_expires_at=None if lease_expires_at is None else float(lease_expires_at),
        cancel_requested=bool(cancel_requested),
        # Rows written before `JobOutcome` hold loose dicts: read as one all the same.
        result=None if result is None else JobOutcome.from_json(json.loads(result), job_state),
    )


def list_filter(
    state: JobState | None, repository: str | None, mark: str
) -> tuple[str, list[object]]:
    """`list`'s WHERE clause (or "") and its parameters, `mark` being the driver's placeholder."""
    where: list[str] = []
    params: list[object] = []
    if state is not None:
        where.append(f"state = {mark}")
        params.append(JobState(state).value)
    if repository is not None:
        # "$" sorts right after "#": the range holds exactly this repository's
        # thread keys (both backends compare the column byte by byte).
        where.append(f"thread_key >= {mark} AND thread_key < {mark}")
        prefix = repository.lower()
        params.extend((prefix + "#", prefix + "$"))
    return (f" WHERE {' AND '.join(where)}" if where else ""), params


def spent_by(repository: str | None, installation_id: int | None) -> tuple[bool, object]:
    """`spent_since`'s filter: whether it is by repository, and the value to match.

    Exactly one of the two is given; a repository matches in any case.
    """
    if (repository is None) == (installation_id is None):
        raise ValueError("name exactly one of a repository and an installation")
    if repository is not None:
        return True, repository.lower()
    return False, installation_id


def spend_lines(rows: Sequence[Sequence[Any]]) -> list[SpendLine]:
    """`spend`'s lines from (day, repository, model, jobs, cost, tokens in, tokens out) rows."""
    return [
        SpendLine(day, repo, model, int(jobs), float(cost), int(tokens_in), int(tokens_out))
        for day, repo, model, jobs, cost, tokens_in, tokens_out in rows
    ]
