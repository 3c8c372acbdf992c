"""bot.intake.prompted: a workflow's own prompt on any event, as `neo action` reads it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.intake.prompted import prompted, workflow_trigger
from bot.intake.triggers import Ignore, Reason, Rules
from bot.intake.webhooks import Delivery
from bot.jobs import JobKind, Thread, TriggerKind

RULES = Rules(app_bot_login="neo[bot]")
REPO = "octo/hello"


def delivery(event: str, action: str | None = None, **payload: Any) -> Delivery:
    body = {"sender": {"login": "mona", "type": "User"}, **payload}
    if action is not None:
        body["action"] = action
    return Delivery(event=event, delivery_id="actions-1-1", action=action, payload=body)


@pytest.mark.parametrize(
    ("event", "action", "expected"),
    [
        # A comment, whatever its action: the worker reads and reacts to it.
        ("issue_comment", "created", TriggerKind.COMMENT),
        ("issue_comment", "edited", TriggerKind.COMMENT),
        ("pull_request_review_comment", "edited", TriggerKind.REVIEW_COMMENT),
        ("pull_request_review", "submitted", TriggerKind.REVIEW),
        ("schedule", None, TriggerKind.SCHEDULE),
        ("workflow_dispatch", None, TriggerKind.DISPATCH),
        ("issues", "labeled", TriggerKind.ISSUE_LABELED),
        ("push", None, TriggerKind.OTHER),
        ("pull_request", "opened", TriggerKind.OTHER),
    ],
)
def test_a_workflows_event_is_a_trigger_kind_by_its_name(
    event: str, action: str | None, expected: TriggerKind
) -> None:
    assert workflow_trigger(delivery(event, action)) is expected


def test_a_scheduled_workflow_asks_in_nobodys_name_on_no_thread() -> None:
    request = prompted(
        delivery("schedule"),
        RULES,
        repository=REPO,
        actor="mona",
        prompt="Update the lockfile.",
        dedupe_key="actions:1",
    )
    assert not isinstance(request, Ignore)
    assert (request.kind, request.trigger, request.event) == (
        JobKind.TASK,
        TriggerKind.SCHEDULE,
        "schedule",
    )
    assert (request.thread, request.author, request.installation_id) == (Thread(REPO, 0), "", None)
    assert request.instruction_from_workflow is True


def test_an_edited_comment_points_the_job_at_the_comment_and_its_author() -> None:
    comment = {"id": 77, "author_association": "MEMBER", "body": "no mention"}
    request = prompted(
        delivery("issue_comment", "edited", issue={"number": 5}, comment=comment),
        RULES,
        repository=REPO,
        actor="actor",
        prompt="Answer it.",
        dedupe_key="actions:1",
    )
    assert not isinstance(request, Ignore)
    assert request.trigger is TriggerKind.COMMENT
    assert (request.thread, request.trigger_id) == (Thread(REPO, 5), 77)
    assert (request.author, request.author_association) == ("mona", "MEMBER")


def test_neo_itself_and_bots_not_allowed_start_nothing() -> None:
    def by(login: str, kind: str) -> object:
        event = delivery("push")
        event.payload["sender"] = {"login": login, "type": kind}
        return prompted(
            event, RULES, repository=REPO, actor="x", prompt="x", dedupe_key="actions:1"
        )

    assert by("neo[bot]", "Bot") == Ignore(Reason.SELF)
    assert by("renovate[bot]", "Bot") == Ignore(Reason.BOT)
