"""The refusal ladder's shared rungs: who may ask, the providers, today's budgets.

Each refusal is one reply on the thread (`reply_once`, so a retry does not
say it twice) and an outcome, before any progress comment, token, clone or
model call. The task job climbs them all; a CI repair, which no one asked
for, only the providers and the budgets; `@neo stop` only who may ask.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bot.config import RepoConfig
from bot.github.client import RepoClient
from bot.jobs import Conclusion, Job, JobRequest
from bot.worker.budgets import Allowance, Over, Scope, allowance, day_window, limits, over_text
from bot.worker.progress import Outcome
from bot.worker.providers import unavailable, unavailable_text
from bot.worker.services import JobServices

__all__ = ["Allowed", "may_ask", "may_start"]


@dataclass(frozen=True, slots=True)
class Allowed:
    """A run that may start: what today's budgets leave it, and what its report says of them."""

    allowance: Allowance | None = None
    notes: tuple[str, ...] = ()


def may_ask(
    services: JobServices,
    github: RepoClient,
    request: JobRequest,
    level: str | None,
    config: RepoConfig | None,
) -> bool:
    """Whether the request's author, whose role is `level`, may have Neo work (or stop
    it) here. An invalid config (None) still has its defaults: `allowed_users`, bots."""
    rules = config or services.config.source.fallback()
    return services.access.authorised(request, level, rules, github.bot_login)


async def may_start(
    services: JobServices,
    job: Job,
    github: RepoClient,
    config: RepoConfig,
    reply_to: int | None,
) -> Outcome | Allowed:
    """The refusal for a run `config` asks for, replied on `reply_to` (None: nowhere);
    else what it may spend."""
    if (refusal := _unavailable(services, config)) is not None:
        # Before any comment, clone or sandbox: the run could not start.
        if reply_to is not None:
            await github.reply_once(reply_to, f"provider-unavailable-{job.id}", refusal)
        return Outcome(conclusion=Conclusion.FAILED, error=refusal)
    decided = await _budget_left(services, job, config)
    if isinstance(decided, str):
        # The same shape: one comment, before any reaction, clone or model call.
        if reply_to is not None:
            await github.reply_once(reply_to, f"over-budget-{job.id}", decided)
        return Outcome(conclusion=Conclusion.FAILED, error=decided)
    return decided


def _unavailable(services: JobServices, config: RepoConfig) -> str | None:
    """Why the service cannot run `config`'s providers (their keys are in its
    environment), or None."""
    source = services.config.source
    where = {
        key: f"from {source.overrides_source}"
        if key in source.overrides
        else f"from `{source.path}`"
        for key in ("provider", "fallback")
        if key in source.overrides or key in config.model_fields_set
    }
    problem = unavailable(config, os.environ, source=where)
    return None if problem is None else unavailable_text(problem)


async def _budget_left(services: JobServices, job: Job, config: RepoConfig) -> str | Allowed:
    """Why today's spend stops the job from starting; else what it may spend."""
    request = job.request
    found = limits(config.budgets, services.budgets, config_path=services.config.source.path)
    if not found:
        return Allowed()
    now = services.wall_clock()
    start, _ = day_window(now)
    spent: dict[Scope, float] = {}
    for limit in found:
        if limit.scope == "repository":
            spent["repository"] = await services.queue.spent_since(
                start, repository=request.thread.repository
            )
        elif request.installation_id is not None:
            spent["installation"] = await services.queue.spent_since(
                start, installation_id=request.installation_id
            )
    decided = allowance(spent, found, now)
    if isinstance(decided, Over):
        services.log("over_budget", job=job.id, scope=decided.limit.scope)
        return over_text(
            decided,
            repository=request.thread.repository,
            installation_id=request.installation_id,
        )
    notes = tuple(note for limit in found if (note := limit.note) is not None)
    return Allowed(decided, notes)
