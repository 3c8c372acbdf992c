"""A job's run of the runner, the same for the task and the CI repair.

`plan_run` is token → identity → spec (with what today's budgets leave it);
`run_planned` is AGENTS.md → the live run → spend → the outcome the job kind
concludes from it. Whatever fails after the plan is one line in the outcome,
and the branch and session the run used still reach the report.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.github.app import CI_REPAIR_PERMISSIONS, WORKFLOW_JOB_PERMISSIONS
from bot.github.job_reads import JobReads
from bot.jobs import Conclusion, Job, JobKind, conclusion_of
from bot.queue import QueueError, SpendRecord
from bot.worker.access import is_unchecked
from bot.worker.budgets import bounded_cost, spend_records, usd
from bot.worker.context import Ended, JobContext
from bot.worker.live import run_live
from bot.worker.progress import Outcome
from bot.worker.refusals import Allowed
from bot.worker.reporting import failed_outcome
from bot.worker.running import Running, Stopped
from bot.worker.services import JobServices
from bot.worker.spec import Identity, ThreadContext, job_spec
from bot.worker.steering import unread_note
from runner.job import JobResult, JobSpec

__all__ = ["Planned", "Ran", "plan_run", "run_planned"]


@dataclass(frozen=True, slots=True)
class Planned:
    """What the runner is asked, and what the report will say of it."""

    spec: JobSpec
    # The work goes to the pull request's own branch: there is no pull request to open.
    own_branch: bool
    # Lines of the service's own about the run (a budget's ceiling or allowance).
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ran:
    """What the runner made of a planned job, and who stopped it when someone did."""

    planned: Planned
    result: JobResult
    cancelled_by: str | None


async def plan_run(
    services: JobServices,
    ctx: JobContext,
    allowed: Allowed,
    thread: ThreadContext | None,
    *,
    permissions: Mapping[str, str] | None = None,
    shape: Callable[[JobSpec], JobSpec] = lambda spec: spec,
) -> Planned:
    """The token (with `permissions`, and `workflows` where edits are allowed), who
    pushes, and the spec `shape` finishes; its cost bounded by what `allowed` leaves."""
    request = ctx.request
    assert request.installation_id is not None
    if ctx.config.allow_workflow_edits:
        # Pushing under .github/workflows/ takes the `workflows` permission.
        permissions = {**WORKFLOW_JOB_PERMISSIONS, **(permissions or {})}
    token = await services.app.installation_token(
        request.installation_id, request.thread.repository, permissions
    )
    who = Identity(bot=ctx.bot, token=token.token, unchecked=is_unchecked(request, ctx.bot))
    spec, own_branch = job_spec(
        ctx.job,
        ctx.config,
        services.settings,
        default_branch=ctx.default_branch,
        thread=thread,
        who=who,
    )
    spec = shape(spec)
    if spec.mcp.settings.github:
        # The built-in `github` server reads through the job's client; CI logs
        # through one that may read Actions, asked for only when a log is.
        reads = JobReads(
            ctx.github, logs=lambda: services.repo_client(request, CI_REPAIR_PERMISSIONS)
        )
        spec = replace(spec, mcp=replace(spec.mcp, github=reads))
    notes = allowed.notes
    bounded = bounded_cost(spec.settings.max_cost_usd, allowed.allowance)
    if bounded != spec.settings.max_cost_usd:
        assert allowed.allowance is not None
        spec = replace(spec, settings=replace(spec.settings, max_cost_usd=bounded))
        left = allowed.allowance
        notes += (
            f"Today's {left.limit.scope} budget has {usd(left.usd)} left"
            f" ({left.limit.source}), so this run may spend at most that.",
        )
    return Planned(spec, own_branch, notes)


async def run_planned(
    services: JobServices,
    ctx: JobContext,
    running: Running,
    planned: Planned,
    conclude: Callable[[Ran], Awaitable[Outcome]],
    **logged: Any,
) -> Ended:
    """The run, live, its spend recorded; then what `conclude` makes of it (a pull
    request, a review, replies). `logged` goes on the `spec_ready` log line."""
    spec = planned.spec
    services.log("spec_ready", job=ctx.job.id, branch=spec.work_branch, **logged)
    ended = Ended(Outcome(conclusion=Conclusion.FAILED), spec.work_branch)
    try:
        project_context = None
        if ctx.request.thread.is_pull_request:
            # The PR's own AGENTS.md could rewrite Neo's instructions: the default branch's.
            agents = await ctx.github.read_file("AGENTS.md", ref=ctx.default_branch)
            project_context = agents or ""
        result = await run_live(services, ctx, running, spec, project_context)
        handle = str(getattr(services.settings, "handle", "@neo"))
        late = await unread_note(services.queue, ctx.job.id, handle)
        spend = _spend_of(services, ctx.job, result)
        recorded = await _record_spend(services, ctx.job, spend)
        ended = replace(ended, session_id=result.session_id, spend=spend, spend_recorded=recorded)
        services.check_alive(running)
        cancelled_by = None
        if conclusion_of(result) is Conclusion.CANCELLED:
            cancelled_by = await _cancelled_by(services, ctx.job)
        outcome = await conclude(Ran(planned, result, cancelled_by))
        if late:
            outcome = replace(outcome, notes=(*outcome.notes, *late))
    except Stopped:
        raise
    except Exception as error:
        return replace(ended, outcome=failed_outcome(ctx.job, error))
    if planned.notes:
        outcome = replace(outcome, notes=(*planned.notes, *outcome.notes))
    return replace(ended, outcome=outcome)


def _spend_of(services: JobServices, job: Job, result: JobResult) -> tuple[SpendRecord, ...]:
    """What the run cost, as the queue records it; taken once, so it is stored once."""
    request = job.request
    return spend_records(
        job.id,
        request.thread.repository,
        request.installation_id,
        result,
        services.wall_clock(),
    )


async def _record_spend(services: JobServices, job: Job, records: tuple[SpendRecord, ...]) -> bool:
    """Store what the run cost now, so a worker that dies before its report loses none
    of it; False when the queue is away (the job's finish writes it again)."""
    if not records:
        return True
    try:
        await services.queue.record_spend(records)
    except QueueError as error:
        services.log("spend_not_recorded", job=job.id, error=str(error))
        return False
    return True


async def _cancelled_by(services: JobServices, job: Job) -> str | None:
    """Who stopped `job`, when the queue shows it: the run page's Stop names them
    on the job itself, `@neo stop` is a cancel request of theirs."""
    try:
        stopped = await services.queue.get(job.id)
    except QueueError:
        stopped = None
    if stopped is not None and stopped.result is not None and stopped.result.cancelled_by:
        return stopped.result.cancelled_by
    try:
        # Any state: the request that stopped it may not have finished yet.
        jobs = await services.queue.list(repository=job.request.thread.repository, limit=100)
    except QueueError:
        return None
    for other in jobs:
        if other.request.kind is not JobKind.STOP or other.result is None:
            continue
        if job.id in other.result.cancel_requested:
            return other.request.author
    return None
