"""The job outcome: one mapping from the runner's result, and rows old and new; requests
queued before a field existed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from bot.jobs import (
    Conclusion,
    JobKind,
    JobOutcome,
    JobRequest,
    JobState,
    Thread,
    TriggerKind,
    conclusion_of,
)
from runner.job import JobResult


@pytest.mark.parametrize(
    ("conclusion", "error_kind", "expected"),
    [
        ("changed", None, Conclusion.SUCCESS),
        ("changed", "max_turns", Conclusion.INCOMPLETE),
        ("no_changes", None, Conclusion.NO_CHANGES),
        ("failed", "sandbox_error", Conclusion.FAILED),
        ("cancelled", None, Conclusion.CANCELLED),
    ],
)
def test_the_runners_result_has_one_conclusion(
    conclusion: Any, error_kind: str | None, expected: Conclusion
) -> None:
    result = JobResult(conclusion=conclusion, branch="neo/issue-1", error_kind=error_kind)
    assert conclusion_of(result) is expected


@pytest.mark.parametrize(
    ("conclusion", "state"),
    [
        (Conclusion.SUCCESS, JobState.SUCCEEDED),
        (Conclusion.NO_CHANGES, JobState.SUCCEEDED),
        # Not done: `neo jobs retry` goes on with it.
        (Conclusion.INCOMPLETE, JobState.FAILED),
        (Conclusion.FAILED, JobState.FAILED),
        (Conclusion.CANCELLED, JobState.CANCELLED),
        (Conclusion.UNAUTHORISED, JobState.FAILED),
        (Conclusion.STOPPED, JobState.SUCCEEDED),
    ],
)
def test_each_conclusion_ends_in_its_queue_state(conclusion: Conclusion, state: JobState) -> None:
    assert conclusion.state is state


@pytest.mark.parametrize(
    "outcome",
    [
        JobOutcome(
            conclusion=Conclusion.SUCCESS,
            pr_url="https://github.test/o/r/pull/3",
            branch="neo/issue-1",
            session_id="s",
            cost_usd=0.25,
            report="✅ **Done**",
        ),
        JobOutcome(
            conclusion=Conclusion.SUCCESS,
            review_url="https://github.test/o/r/pull/3#pullrequestreview-9",
            report="✅ One review",
        ),
        JobOutcome(conclusion=Conclusion.CANCELLED, error="stopped", cancelled_by="mona"),
        JobOutcome(conclusion=Conclusion.STOPPED, cancelled=(2,), cancel_requested=(1, 3)),
        JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised"),
    ],
)
def test_an_outcome_reads_back_as_written(outcome: JobOutcome) -> None:
    assert JobOutcome.from_json(outcome.to_json(), outcome.conclusion.state) == outcome


# Rows as the worker and the queue wrote them before `JobOutcome`.
@pytest.mark.parametrize(
    ("row", "state", "expected"),
    [
        (
            {
                "conclusion": "success",
                "pr_url": "https://github.test/o/r/pull/3",
                "error": None,
                "branch": "neo/issue-1",
                "session_id": "s",
                "cost_usd": 1,
                "report": "r",
            },
            JobState.SUCCEEDED,
            JobOutcome(
                conclusion=Conclusion.SUCCESS,
                pr_url="https://github.test/o/r/pull/3",
                branch="neo/issue-1",
                session_id="s",
                cost_usd=1.0,
                report="r",
            ),
        ),
        (
            {"conclusion": "failed", "error": "unauthorised"},
            JobState.FAILED,
            JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised"),
        ),
        (
            {"conclusion": "stopped", "cancelled": [4], "cancel_requested": []},
            JobState.SUCCEEDED,
            JobOutcome(conclusion=Conclusion.STOPPED, cancelled=(4,)),
        ),
        (
            {"cancelled": [], "cancel_requested": [5]},
            JobState.RUNNING,
            JobOutcome(conclusion=Conclusion.STOPPED, cancel_requested=(5,)),
        ),
        (
            {"error": "gave up after 3 attempts"},
            JobState.FAILED,
            JobOutcome(conclusion=Conclusion.FAILED, error="gave up after 3 attempts"),
        ),
        (
            {"error": "cancelled on request before it ran"},
            JobState.CANCELLED,
            JobOutcome(conclusion=Conclusion.CANCELLED, error="cancelled on request before it ran"),
        ),
        ({}, JobState.SUCCEEDED, JobOutcome(conclusion=Conclusion.SUCCESS)),
        (
            {"conclusion": "changed", "cost_usd": True},
            JobState.FAILED,
            JobOutcome(conclusion=Conclusion.FAILED),
        ),
    ],
)
def test_rows_written_as_dicts_read_as_outcomes(
    row: dict[str, Any], state: JobState, expected: JobOutcome
) -> None:
    assert JobOutcome.from_json(row, state) == expected


REQUEST = JobRequest(
    kind=JobKind.TASK,
    thread=Thread("octo/hello", 3),
    installation_id=7,
    event="issue_comment.created",
    trigger=TriggerKind("issue_comment.created"),
    trigger_id=30,
    author="mona",
    author_association="COLLABORATOR",
    instruction="@neo add a line",
    dedupe_key="comment:30",
    delivery_id="d1",
    branch="neo/docs",
    instruction_from_workflow=True,
)


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        ((), REQUEST),
        # A workflow's prompt is not the thread's own text: older rows are.
        (("instruction_from_workflow",), replace(REQUEST, instruction_from_workflow=False)),
        (("branch",), replace(REQUEST, branch=None)),
    ],
)
def test_requests_read_back_and_older_rows_get_the_defaults(
    missing: tuple[str, ...], expected: JobRequest
) -> None:
    row = json.loads(json.dumps(REQUEST.to_json()))
    for name in missing:
        del row[name]
    assert JobRequest.from_json(row) == expected


@pytest.mark.parametrize(
    ("kind", "mode", "expected"),
    [
        ("run", None, JobKind.TASK),
        ("run", "task", JobKind.TASK),
        ("run", "review", JobKind.REVIEW),
        ("run", "repair", JobKind.CI_REPAIR),
        ("cancel", None, JobKind.STOP),
    ],
)
def test_rows_queued_before_the_job_kinds_read_as_one(
    kind: str, mode: str | None, expected: JobKind
) -> None:
    row = json.loads(json.dumps(REQUEST.to_json()))
    row["kind"] = kind
    if mode is not None:
        row["mode"] = mode
    assert JobRequest.from_json(row).kind is expected


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ("issue_comment.created", TriggerKind.COMMENT),
        ("pull_request_review.submitted", TriggerKind.REVIEW),
        ("workflow_run.completed", TriggerKind.WORKFLOW_RUN),
        ("schedule", TriggerKind.SCHEDULE),
        # A workflow's event Neo has no use for (`neo action`'s prompt on a push).
        ("push", TriggerKind.OTHER),
    ],
)
def test_rows_queued_before_the_trigger_was_recorded_read_it_from_their_event(
    event: str, expected: TriggerKind
) -> None:
    row = json.loads(json.dumps(REQUEST.to_json()))
    del row["trigger"]
    row["event"] = event
    request = JobRequest.from_json(row)
    assert (request.trigger, request.event) == (expected, event)


def test_stops_and_steers_go_in_the_queues_cancel_lane_and_every_other_kind_in_its_run_lane() -> (
    None
):
    assert [kind.lane for kind in JobKind] == ["run", "run", "run", "cancel", "cancel"]
    assert replace(REQUEST, kind=JobKind.STOP).lane == "cancel"
    assert replace(REQUEST, kind=JobKind.STEER).lane == "cancel"
    stored = replace(REQUEST, kind=JobKind.STEER).to_json()
    assert JobRequest.from_json(stored).kind is JobKind.STEER
