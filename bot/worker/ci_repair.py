"""The CI repair job: a red check on a pull request Neo opened, repaired in the
session that made it.

Nothing shows on GitHub when it is not Neo's to repair (`repair.skip_reason`
and the rest, pure); else the round gets a comment of its own on the pull
request, edited while it runs, then its report, and a section of its own in
the report of the work that made the pull request, whose earlier record
stays whole; the body's status line follows it (`repair_record`). When the
repairs in a row are spent, one comment says so. The run goes on the pull
request's own branch, in the owning thread's session.
"""

from __future__ import annotations

import asyncio
import zipfile
from dataclasses import dataclass, replace

import httpx

from bot.github.app import CI_REPAIR_PERMISSIONS
from bot.github.checks import Annotation, CheckRun, PullHead
from bot.github.client import GitHubError, RepoClient
from bot.github.downloads import LogTail, download_tail, download_zip_tails
from bot.jobs import Conclusion, JobKind, JobState, TriggerKind, run_url
from bot.jobs import Thread as JobsThread
from bot.queue import QueueError
from bot.worker.context import Ended, JobContext, ProgressComment
from bot.worker.progress import Outcome, Progress
from bot.worker.prompt import FailedCheck, Post, RedHead, build_repair_prompt
from bot.worker.pull_request import with_status
from bot.worker.refusals import Allowed, may_start
from bot.worker.repair import (
    Owner,
    Skip,
    limit_text,
    made_by,
    owning_thread,
    repair_commit,
    repairs_so_far,
    skip_reason,
)
from bot.worker.repair_record import RepairRecord
from bot.worker.repair_report import CheckLink, RepairRound, status_limit
from bot.worker.reporting import failed_outcome, report
from bot.worker.running import Running, Stopped
from bot.worker.runs import Ran, plan_run, run_planned
from bot.worker.services import JobServices
from bot.worker.settle import closed_earlier
from bot.worker.spec import ThreadContext
from bot.worker.texts import run_outcome
from runner.job import JobSpec

__all__ = ["ci_repair_job"]

# A CI repair reads at most this many failed checks, and of a run's ZIP this many logs.
_REPAIR_CHECKS = 5
_RUN_LOG_MEMBERS = 6
_LOG_TIMEOUT = 120.0


async def ci_repair_job(services: JobServices, running: Running) -> None:
    """Repair the red head of a pull request Neo opened, or say why not."""
    job = running.job
    request = job.request
    progress = Progress(
        job.id, clock=services.clock, run_url=run_url(services.settings.public_url, job.id)
    )
    progress.start()
    services.log("job_started", job=job.id, thread=request.thread.key, attempt=job.attempts)
    comment: ProgressComment | None = None
    record: RepairRecord | None = None
    try:
        github = await services.repo_client(request, CI_REPAIR_PERMISSIONS)
        # The round's comment, and so its report, is on the pull request.
        if await closed_earlier(services.settler, running, github, (request.thread.number,)):
            return
        ended, comment, record = await _repair(services, running, github, progress)
    except Stopped:
        raise
    except Exception as error:
        ended = Ended(failed_outcome(job, error))

    async def recorded(outcome: Outcome) -> None:
        assert record is not None
        await record.finish(outcome, progress.state.commands)

    await report(services, running, progress, ended, comment, then=recorded if record else None)


async def _repair(
    services: JobServices, running: Running, github: RepoClient, progress: Progress
) -> tuple[Ended, ProgressComment | None, RepairRecord | None]:
    """How the job ended, the comment the report goes to (None: nothing to report), and
    the record the round keeps elsewhere."""
    job = running.job
    request = job.request
    default_branch, (config, _) = await asyncio.gather(
        github.default_branch(), services.config.resolve(github, request)
    )
    # An invalid file: its comment comes with the next mention, not with CI.
    if config is None or not config.ci_repair.enabled:
        return _skipped(services, job.id, Skip.DISABLED), None, None
    pull = await github.pull_head()
    bot = github.bot_login
    repository = request.thread.repository
    reason = skip_reason(pull, red_sha=request.head_sha, bot=bot, repository=repository)
    if reason is not None:
        return _skipped(services, job.id, reason), None, None
    commit = await github.head_commit(pull.head_sha)
    if not made_by(commit, bot):
        return _skipped(services, job.id, Skip.NOT_NEOS_PUSH), None, None
    failed = tuple(run for run in await github.check_runs(pull.head_sha) if run.failed)
    if not failed:
        return _skipped(services, job.id, Skip.GREEN), None, None
    owner = owning_thread(pull.head_ref, config.branch_prefix, pull.number, repository)
    if await _thread_busy(services, owner.thread, job.id):
        # Its push starts CI again; two runs must not share one session and branch.
        return _skipped(services, job.id, Skip.BUSY), None, None
    done = repairs_so_far(commit.message)
    limit = config.ci_repair.attempts
    if done >= limit:
        # The service's handle; `neo action` has none, and runs no repair.
        handle = str(getattr(services.settings, "handle", "@neo"))
        key = f"ci-repair-limit-{pull.head_sha}"
        await github.reply_once(pull.number, key, limit_text(done, failed, handle))
        checks = tuple(CheckLink(run.name, run.html_url) for run in failed)
        try:
            status = status_limit(done, checks, handle)
            await github.update_pull_body(pull.number, with_status(pull.body, status))
        except GitHubError as failure:
            services.log("repair_status_failed", job=job.id, error=str(failure))
        services.log("ci_repair_limit", job=job.id, attempts=done, sha=pull.head_sha)
        error = f"CI is still red after {done} repair attempts"
        return Ended(Outcome(conclusion=Conclusion.NO_CHANGES, error=error)), None, None
    decided = await may_start(services, job, github, config, pull.number)
    if isinstance(decided, Outcome):
        return Ended(decided), None, None
    round_ = RepairRound(
        job_id=job.id,
        attempt=done + 1,
        attempts=limit,
        pull_number=pull.number,
        pull_url=pull.html_url,
        red_sha=pull.head_sha,
        checks=tuple(CheckLink(run.name, run.html_url) for run in failed),
    )
    record, comment = await RepairRecord.open(
        services, github, progress, round_, owner=owner.thread.number, pull_body=pull.body
    )
    ctx = JobContext(job, github, config, default_branch, progress, comment)
    red = RedHead(
        pr_url=pull.html_url,
        number=pull.number,
        branch=pull.head_ref,
        head_sha=pull.head_sha,
        attempt=done + 1,
        attempts=limit,
    )
    try:
        red_head = _Red(pull, owner, red, failed)
        ended = await _run_repair(services, ctx, running, decided, red_head, record)
    except Stopped:
        raise
    except Exception as error:
        ended = Ended(failed_outcome(job, error))
    return ended, comment, record


@dataclass(frozen=True, slots=True)
class _Red:
    """The red head to repair: its pull request, the thread that owns it, its failed checks."""

    pull: PullHead
    owner: Owner
    red: RedHead
    failed: tuple[CheckRun, ...]


async def _run_repair(
    services: JobServices,
    ctx: JobContext,
    running: Running,
    allowed: Allowed,
    red: _Red,
    record: RepairRecord,
) -> Ended:
    """The runner on the pull request's own branch, in the owning thread's session."""
    ctx.progress.note("reading the failed checks")
    checks, run_logs = await _read_failures(services, ctx, red.failed)
    prompt = build_repair_prompt(ctx.request.thread.repository, red.red, checks, run_logs)
    pull, owner = red.pull, red.owner
    thread = ThreadContext(
        title=pull.title,
        opening=Post(author=pull.author, association="NONE", body=""),
        comments=(),
        requester_id=None,
        head_ref=pull.head_ref,
        same_repository=True,
        pr_url=pull.html_url,
    )

    def shape(spec: JobSpec) -> JobSpec:
        return replace(
            spec,
            prompt=prompt,
            session_key=owner.thread.key,
            commit=repair_commit(owner.thread.number, red.red.attempt, red.failed),
            # No one asked: the commit is Neo's alone, which is what the next red head checks.
            co_author=None,
        )

    # The token the job's reads had (one mint), with `workflows` when edits are allowed.
    planned = await plan_run(
        services, ctx, allowed, thread, permissions=CI_REPAIR_PERMISSIONS, shape=shape
    )

    async def conclude(ran: Ran) -> Outcome:
        record.result = ran.result
        return run_outcome(
            ran.result,
            pr_url=pull.html_url if ran.result.changed else None,
            cancelled_by=ran.cancelled_by,
            config_path=services.config.source.path,
        )

    return await run_planned(services, ctx, running, planned, conclude, attempt=red.red.attempt)


def _skipped(services: JobServices, job_id: int, reason: Skip) -> Ended:
    services.log("ci_repair_skipped", job=job_id, reason=reason.value)
    return Ended(Outcome(conclusion=Conclusion.NO_CHANGES, error=f"no CI repair: {reason.value}"))


async def _thread_busy(services: JobServices, thread: JobsThread, job_id: int) -> bool:
    """Whether another job of `thread` is queued or running."""
    try:
        jobs = await services.queue.list(repository=thread.repository, limit=100)
    except QueueError:
        return False
    return any(
        other.id != job_id
        and other.request.thread.key == thread.key
        and other.request.kind is not JobKind.STOP
        and other.state in (JobState.QUEUED, JobState.RUNNING)
        for other in jobs
    )


async def _read_failures(
    services: JobServices, ctx: JobContext, failed: tuple[CheckRun, ...]
) -> tuple[tuple[FailedCheck, ...], tuple[LogTail, ...]]:
    """Each failed check's annotations and log tail; a workflow run's logs (a ZIP).

    Context, not the work: what GitHub does not give is logged and left out.
    """
    request, github, job_id = ctx.request, ctx.github, ctx.job.id
    whole_run = request.trigger is TriggerKind.WORKFLOW_RUN
    checks: list[FailedCheck] = []
    run_logs: tuple[LogTail, ...] = ()
    async with httpx.AsyncClient(timeout=_LOG_TIMEOUT, follow_redirects=True) as plain:
        for run in failed[:_REPAIR_CHECKS]:
            notes: tuple[Annotation, ...] = ()
            logs: tuple[LogTail, ...] = ()
            try:
                if run.annotations_count:
                    notes = await github.annotations(run.id)
                if run.from_actions and not whole_run:
                    # An Actions check run's id is its job's.
                    url = await github.log_location("job", run.id)
                    logs = (await download_tail(plain, url, run.name),)
            except (GitHubError, httpx.HTTPError) as error:
                services.log("ci_log_missing", job=job_id, check=run.id, error=str(error))
            checks.append(FailedCheck(run=run, annotations=notes, logs=logs))
        if whole_run:
            try:
                url = await github.log_location("run", request.trigger_id)
                run_logs = await download_zip_tails(plain, url, members=_RUN_LOG_MEMBERS)
            except (GitHubError, httpx.HTTPError, ValueError, zipfile.BadZipFile) as error:
                services.log("ci_log_missing", job=job_id, run=request.trigger_id, error=str(error))
    return tuple(checks), run_logs
