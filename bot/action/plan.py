"""Which job a workflow run's event asks for, by the App's own rules. Pure.

    decision = plan(context, inputs, payload, bot_login="github-actions[bot]")

Triage as for a webhook, or the workflow's own prompt on any event
(docs/architecture.md, "The Action").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any, Final

from bot.action.inputs import ActionContext, ActionInputs
from bot.intake.triggers import Ignore, Reason, Rules, triage
from bot.intake.webhooks import Delivery
from bot.jobs import JobRequest, Thread

__all__ = ["ACTION_INSTALLATION", "Run", "Skip", "plan", "workflow_branch"]

# The workflow token stands in for the App's installation: the worker needs an id.
ACTION_INSTALLATION: Final = 0
_SLUG = re.compile(r"[^a-z0-9]+")
_MAX_SLUG = 60


@dataclass(frozen=True, slots=True)
class Run:
    """The job to run."""

    request: JobRequest


@dataclass(frozen=True, slots=True)
class Skip:
    """Nothing to run, and why (one line)."""

    reason: str


def plan(
    context: ActionContext,
    inputs: ActionInputs,
    payload: Mapping[str, Any],
    *,
    bot_login: str,
) -> Run | Skip:
    """The job `payload` (the run's event) asks for, or why it asks for none."""
    action = payload.get("action")
    delivery = Delivery(
        event=context.event_name,
        delivery_id=f"actions-{context.run_id}-{context.run_attempt}",
        action=action if isinstance(action, str) else None,
        payload=dict(payload),
    )
    rules = Rules(
        app_bot_login=bot_login,
        handle=inputs.trigger_phrase,
        trigger_label=inputs.label_trigger,
        allowed_bots=inputs.allowed_bots,
    )
    if inputs.prompt is not None:
        return _automation(context, inputs, delivery, rules, inputs.prompt)
    found = triage(delivery, rules)
    if isinstance(found, Ignore):
        return Skip(f"{delivery.event_action}: {found.reason}")
    runs = [request for request in found if request.kind == "run"]
    if not runs:
        return Skip(
            f"{delivery.event_action}: {inputs.trigger_phrase} stop has nothing to stop here "
            "(cancel the workflow run that is working instead)"
        )
    request = runs[0]
    if request.mode == "repair":
        # A repair continues a session `neo serve` keeps; a workflow's run has none.
        return Skip(f"{delivery.event_action}: CI repair runs under neo serve, not neo action")
    if request.thread.repository.lower() != context.repository.lower():
        return Skip(f"{delivery.event_action}: the event is not about {context.repository}")
    return Run(replace(request, installation_id=ACTION_INSTALLATION))


def _automation(
    context: ActionContext, inputs: ActionInputs, delivery: Delivery, rules: Rules, prompt: str
) -> Run | Skip:
    payload = delivery.payload
    event = delivery.event_action
    sender = _login(payload.get("sender"))
    blocked = _blocked(payload.get("sender"), rules)
    if blocked is not None:
        return Skip(f"{event}: {blocked}")
    request = JobRequest(
        kind="run",
        thread=Thread(context.repository, 0),
        installation_id=ACTION_INSTALLATION,
        event=event,
        trigger_id=0,
        # A schedule is the workflow file's own doing: nobody to check. Anything
        # else was started by someone (dispatch, push, ...), who must have access.
        author="" if context.event_name == "schedule" else context.actor or sender,
        author_association="NONE",
        instruction=prompt,
        dedupe_key=f"actions:{context.run_id}",
        delivery_id=delivery.delivery_id,
        instruction_from_workflow=True,
    )
    thread = _thread_of(payload)
    if thread is None:
        branch = workflow_branch(inputs.branch_prefix, context.workflow, context.job)
        return Run(replace(request, branch=branch))
    number, is_pull_request, subject = thread
    if subject.get("locked") is True:
        return Skip(f"{event}: {Reason.LOCKED}")
    # What the event points at: the comment or review for those events (the
    # worker reacts to it and reads it), else the issue or pull request.
    text = _mapping(payload.get("comment")) or _mapping(payload.get("review")) or subject
    trigger_id = text.get("id")
    association = text.get("author_association")
    return Run(
        replace(
            request,
            thread=Thread(context.repository, number, is_pull_request),
            trigger_id=trigger_id if isinstance(trigger_id, int) else 0,
            author=sender or context.actor,
            author_association=association if isinstance(association, str) else "NONE",
        )
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


def _blocked(sender: object, rules: Rules) -> str | None:
    """Why the sender may not trigger a run: Neo itself, or a bot not allowed."""
    user = _mapping(sender)
    login = _login(user)
    if not login:
        return None
    if login.lower() == rules.app_bot_login.lower():
        return Reason.SELF
    is_bot = user.get("type") == "Bot" or login.lower().endswith("[bot]")
    if is_bot and login.lower() not in {bot.lower() for bot in rules.allowed_bots}:
        return Reason.BOT
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _login(user: object) -> str:
    login = _mapping(user).get("login")
    return login if isinstance(login, str) else ""


def workflow_branch(prefix: str, workflow: str, job: str) -> str:
    """The branch a thread-less job of this workflow's `job` works on, the same every run.

    `workflow` is GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/x.yml@ref`,
    whose file name is stable) or, failing that, the workflow's name.
    """
    path = workflow.split("@", 1)[0]
    stem = PurePosixPath(path).stem if path.endswith((".yml", ".yaml")) else path
    parts = [_slug(stem) or "workflow", _slug(job)]
    return prefix + "-".join(part for part in parts if part)


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower())[:_MAX_SLUG].strip("-")
