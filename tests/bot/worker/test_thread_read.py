"""bot.worker.thread_read: what a job's trigger needs read besides its thread (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.github.models import ReadPlan
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind
from bot.worker.thread_read import read_plan

REQUEST = JobRequest(
    kind=JobKind.TASK,
    thread=Thread("octo/hello", 4),
    installation_id=7,
    event="issue_comment.created",
    trigger=TriggerKind.COMMENT,
    trigger_id=40,
    author="mona",
    author_association="OWNER",
    instruction="@neo fix it",
    dedupe_key="issue_comment:40",
    delivery_id="d1",
)
PULL = Thread("octo/hello", 4, is_pull_request=True)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, ReadPlan()),
        # On a pull request: the pull request and its diff.
        ({"thread": PULL}, ReadPlan(pull_request=True, diff=True)),
        # A review job reads the earlier review comments; the diff is the host's git's.
        (
            {"thread": PULL, "kind": JobKind.REVIEW},
            ReadPlan(pull_request=True, earlier=True),
        ),
        (
            {"thread": PULL, "trigger": TriggerKind.REVIEW_COMMENT},
            ReadPlan(pull_request=True, diff=True, review_comment=40),
        ),
        (
            {"thread": PULL, "trigger": TriggerKind.REVIEW},
            ReadPlan(pull_request=True, diff=True, review=40),
        ),
        # A workflow started on a review: the review itself too, as context.
        (
            {"thread": PULL, "trigger": TriggerKind.REVIEW, "instruction_from_workflow": True},
            ReadPlan(pull_request=True, diff=True, review=40, review_body=True),
        ),
    ],
)
def test_the_trigger_says_what_is_read(changes: dict[str, object], expected: ReadPlan) -> None:
    assert read_plan(replace(REQUEST, **changes)) == expected  # type: ignore[arg-type]
