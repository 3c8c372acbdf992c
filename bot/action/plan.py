"""Which job a workflow run's event asks for, by the App's own rules. Pure.

    decision = plan(context, inputs, payload, bot_login="github-actions[bot]")

Triage as for a webhook, or the workflow's own prompt on any event
(`bot.intake.prompted`); docs/architecture.md, "The Action".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any, Final

from bot.action.inputs import ActionContext, ActionInputs
from bot.intake.prompted import prompted
from bot.intake.triggers import Ignore, Rules, triage
from bot.intake.webhooks import Delivery
from bot.jobs import JobKind, JobRequest

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
    runs = [request for request in found if request.lane == "run"]
    if not runs:
        # A workflow's run is steered or stopped on its own page, not by a comment.
        said = "steer" if found and found[0].kind is JobKind.STEER else "stop"
        return Skip(
            f"{delivery.event_action}: {inputs.trigger_phrase} {said} has nothing to {said} here "
            "(cancel the workflow run that is working instead)"
        )
    request = runs[0]
    if request.kind is JobKind.CI_REPAIR:
        # A repair continues a session `neo serve` keeps; a workflow's run has none.
        return Skip(f"{delivery.event_action}: CI repair runs under neo serve, not neo action")
    if request.thread.repository.lower() != context.repository.lower():
        return Skip(f"{delivery.event_action}: the event is not about {context.repository}")
    return Run(replace(request, installation_id=ACTION_INSTALLATION))


def _automation(
    context: ActionContext, inputs: ActionInputs, delivery: Delivery, rules: Rules, prompt: str
) -> Run | Skip:
    found = prompted(
        delivery,
        rules,
        repository=context.repository,
        actor=context.actor,
        prompt=prompt,
        dedupe_key=f"actions:{context.run_id}",
    )
    if isinstance(found, Ignore):
        return Skip(f"{delivery.event_action}: {found.reason}")
    request = replace(found, installation_id=ACTION_INSTALLATION)
    if request.thread.number == 0:
        branch = workflow_branch(inputs.branch_prefix, context.workflow, context.job)
        request = replace(request, branch=branch)
    return Run(request)


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
