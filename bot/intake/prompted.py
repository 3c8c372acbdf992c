"""A workflow's own prompt on any event (`neo action`'s `prompt` input): what the event
is about, and whether its sender may start Neo. Pure.

The Action's triage when the workflow gives the task. The event may be any a
workflow runs on (a push, a schedule, a dispatch, a comment ...), so the
payload is read leniently: the issue or pull request it is about, if any, and
the comment or review that started it. Which trigger kind the event is, by
its name, is decided here, beside triage's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bot.intake.payloads import User
from bot.intake.triggers import Ignore, Reason, Rules, who_blocks
from bot.intake.webhooks import Delivery
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind

__all__ = ["prompted", "workflow_trigger"]

# Whatever the action: the comment or review is what started the run.
_BY_EVENT = {
    "issue_comment": TriggerKind.COMMENT,
    "pull_request_review_comment": TriggerKind.REVIEW_COMMENT,
    "pull_request_review": TriggerKind.REVIEW,
    "schedule": TriggerKind.SCHEDULE,
    "workflow_dispatch": TriggerKind.DISPATCH,
}


def workflow_trigger(delivery: Delivery) -> TriggerKind:
    """The trigger kind of a workflow's event."""
    found = _BY_EVENT.get(delivery.event)
    if found is not None:
        return found
    name = delivery.event_action
    return TriggerKind(name) if name in TriggerKind._value2member_map_ else TriggerKind.OTHER


def prompted(
    delivery: Delivery,
    rules: Rules,
    *,
    repository: str,
    actor: str,
    prompt: str,
    dedupe_key: str,
) -> JobRequest | Ignore:
    """The job a workflow's `prompt` asks for on `delivery`'s event in `repository`,
    started by `actor`; or why none (Neo itself, a bot not allowed, a locked thread).

    No installation (the caller's token stands in for one); no branch for an
    event on no issue or pull request (the caller names the workflow's).
    """
    payload = delivery.payload
    sender = _mapping(payload.get("sender"))
    login = _login(sender)
    if login:
        user = User.model_construct(login=login, type=sender.get("type"))
        blocked = who_blocks([user], rules)
        if blocked is not None:
            return Ignore(blocked)
    trigger = workflow_trigger(delivery)
    request = JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository, 0),
        installation_id=None,
        event=delivery.event_action,
        trigger=trigger,
        trigger_id=0,
        # A schedule is the workflow file's own doing: nobody to check. Anything
        # else was started by someone (dispatch, push, ...), who must have access.
        author="" if trigger is TriggerKind.SCHEDULE else actor or login,
        author_association="NONE",
        instruction=prompt,
        dedupe_key=dedupe_key,
        delivery_id=delivery.delivery_id,
        instruction_from_workflow=True,
    )
    about = _thread_of(payload)
    if about is None:
        return request
    number, is_pull_request, subject = about
    if subject.get("locked") is True:
        return Ignore(Reason.LOCKED)
    # What the event points at: the comment or review for those events (the
    # worker reacts to it and reads it), else the issue or pull request.
    text = _mapping(payload.get("comment")) or _mapping(payload.get("review")) or subject
    trigger_id = text.get("id")
    association = text.get("author_association")
    return replace(
        request,
        thread=Thread(repository, number, is_pull_request),
        trigger_id=trigger_id if isinstance(trigger_id, int) else 0,
        author=login or actor,
        author_association=association if isinstance(association, str) else "NONE",
    )


def _thread_of(payload: Mapping[str, Any]) -> tuple[int, bool, Mapping[str, Any]] | None:
    """(number, is a pull request, the issue or PR object) the payload is about, if any."""
    issue = _mapping(payload.get("issue"))
    if isinstance(issue.get("number"), int):
        return issue["number"], issue.get("pull_request") is not None, issue
    pull = _mapping(payload.get("pull_request"))
    if isinstance(pull.get("number"), int):
        return pull["number"], True, pull
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _login(user: object) -> str:
    login = _mapping(user).get("login")
    return login if isinstance(login, str) else ""
