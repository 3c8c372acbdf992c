"""The task job: `@neo` asked for work (or a review) on an issue, a pull request or none.

In order: the config, the requester's role and the default branch
(together); the refusal ladder (who may ask, a valid config, the providers,
today's budgets); the progress comment, then 👀 in the background; the
thread; the run (`runs`); then a pull request, or the review, and replies in
the review threads the job answers; the report.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.config import render_config_error as render_config_comment
from bot.github.client import GitHubError, ReactionSubject, RepoClient
from bot.jobs import Conclusion, JobKind, JobRequest, TriggerKind, run_url
from bot.worker.access import unauthorised_run
from bot.worker.context import Ended, JobContext, ProgressComment
from bot.worker.progress import Outcome, Progress
from bot.worker.pull_request import RunFacts, comment_url, pr_body, pr_title, threadless_pr_body
from bot.worker.refusals import Allowed, may_ask, may_start
from bot.worker.rendering import render_progress
from bot.worker.reporting import failed_outcome, report
from bot.worker.review import all_folded, fixed_threads, review_outcome, review_payload, unrepeated
from bot.worker.running import Running, Stopped, together
from bot.worker.runs import Ran, plan_run, run_planned
from bot.worker.services import JobServices
from bot.worker.settle import closed_earlier
from bot.worker.spec import ThreadContext
from bot.worker.task_images import task_images
from bot.worker.texts import run_outcome
from bot.worker.thread_read import read_thread
from bot.worker.threads import reply_key, thread_answer, threads_to_resolve
from runner.errors import ConfigError, NeoError

__all__ = ["task_job"]

log = logging.getLogger("neo.worker")


async def task_job(services: JobServices, running: Running) -> None:
    """Run one claimed task or review to its end and record the outcome in the queue."""
    job = running.job
    request = job.request
    progress = Progress(
        job.id, clock=services.clock, run_url=run_url(services.settings.public_url, job.id)
    )
    progress.start()
    threadless = request.thread.number == 0
    reply_to = None if threadless else request.thread.number
    services.log("job_started", job=job.id, thread=request.thread.key, attempt=job.attempts)
    comment: ProgressComment | None = None
    try:
        github = await services.repo_client(request)
        if reply_to is not None and await closed_earlier(
            services.settler, running, github, (reply_to,)
        ):
            return
        # Reads only, and independent: together, so the comment comes sooner.
        default_branch, (config, config_error), level = await together(
            github.default_branch(),
            services.config.resolve(github, request),
            services.access.permission(github, request),
        )
        if not may_ask(services, github, request, level, config):
            if reply_to is not None:
                allowed = (config or services.config.source.fallback()).allowed_users
                where = services.config.source.allowed_users_source()
                text = unauthorised_run(request, allowed, where)
                await github.reply_once(reply_to, "unauthorised", text)
            ended = Ended(Outcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised"))
        elif config is None:
            assert config_error is not None
            if reply_to is not None:
                text = render_config_comment(config_error, docs_url=services.settings.docs_url)
                await github.reply_once(reply_to, "config-error", text)
                services.chore(_react(services, github, request))
            ended = Ended(Outcome(conclusion=Conclusion.FAILED, error=str(config_error)))
        elif isinstance(
            decided := await may_start(services, job, github, config, reply_to), Outcome
        ):
            ended = Ended(decided)
        else:
            if reply_to is not None:
                # The comment first: mutating calls are spaced a second apart,
                # and the reaction can wait for its turn in the background.
                text = render_progress(progress.state, now=services.clock())
                comment = ProgressComment(github, await github.progress_comment(job.id, text))
                services.chore(_react(services, github, request))
            ctx = JobContext(job, github, config, default_branch, progress, comment)
            ended = await _work(services, ctx, running, decided)
    except Stopped:
        raise
    except Exception as error:
        ended = Ended(failed_outcome(job, error))
    await report(services, running, progress, ended, comment)


async def _work(
    services: JobServices, ctx: JobContext, running: Running, allowed: Allowed
) -> Ended:
    request = ctx.request
    if request.kind is JobKind.REVIEW and not request.thread.is_pull_request:
        raise ConfigError("only a pull request can be reviewed")
    thread: ThreadContext | None = None
    if request.thread.number != 0:
        thread = await read_thread(services, request, ctx.github)
    planned = await plan_run(services, ctx, allowed, thread)
    if thread is not None and request.kind is not JobKind.REVIEW:
        images = await task_images(thread, request, ctx.github, services.log)
        planned = replace(planned, spec=replace(planned.spec, images=images))

    async def conclude(ran: Ran) -> Outcome:
        return await _conclude(services, ctx, ran, thread)

    return await run_planned(services, ctx, running, planned, conclude)


async def _conclude(
    services: JobServices, ctx: JobContext, ran: Ran, thread: ThreadContext | None
) -> Outcome:
    """A pull request for the work (unless it went to the PR's own branch), or the
    review; then the replies in the review threads the job answers."""
    result, spec, request = ran.result, ran.planned.spec, ctx.request
    if result.review is not None:
        assert thread is not None
        return await _submit_review(services, ctx, ran, thread)
    pr_url: str | None = None
    draft_refused = False
    # A fork's change that was not pushed is proposed in the report: no pull request.
    pushed = result.fork is None or result.fork.pushed
    if result.changed and pushed:
        ctx.progress.note("opening the pull request")
        if ran.planned.own_branch:
            assert thread is not None
            pr_url = thread.pr_url
        else:
            state = ctx.progress.state
            report = None
            if ctx.comment is not None:
                report = comment_url(
                    services.settings.git_url,
                    request.thread.repository,
                    request.thread.number,
                    ctx.comment.id,
                )
            facts = RunFacts(state.commands, state.checklist, report, state.run_url)
            pr = await ctx.github.open_or_update_pr(
                head=spec.work_branch,
                base=ctx.default_branch,
                title=pr_title(result),
                body=(
                    pr_body(result, request, facts)
                    if thread
                    else threadless_pr_body(result, request, facts)
                ),
                # Work a budget cut short is never ready for review.
                draft=ctx.config.draft or result.incomplete,
            )
            pr_url = pr.url
            draft_refused = pr.draft_refused
    notes: tuple[str, ...] = ()
    if thread is not None and thread.answer:
        notes = await _answer_threads(services, ctx, ran, thread)
    outcome = run_outcome(
        result,
        pr_url=pr_url,
        draft_refused=draft_refused,
        cancelled_by=ran.cancelled_by,
        config_path=services.config.source.path,
    )
    return replace(outcome, notes=(*outcome.notes, *notes)) if notes else outcome


async def _submit_review(
    services: JobServices, ctx: JobContext, ran: Ran, thread: ThreadContext
) -> Outcome:
    """The one review of a review job; comments GitHub will not place go in its summary."""
    result = ran.result
    assert result.review is not None
    ctx.progress.note("submitting the review")
    draft = unrepeated(result.review, thread.earlier)
    key = f"review-{ctx.job.id}"
    body, comments = review_payload(draft)
    try:
        review = await ctx.github.submit_review(key, body, comments)
    except GitHubError as error:
        if error.status != 422 or not comments:
            raise
        # GitHub's diff and the host's disagree on a line: one review all the same.
        services.log("review_inline_refused", job=ctx.job.id, error=str(error))
        draft = all_folded(draft)
        body, comments = review_payload(draft)
        review = await ctx.github.submit_review(key, body, comments)
    resolved = await _resolve_fixed(services, ctx)
    return review_outcome(result, draft, review.url, resolved=resolved)


async def _resolve_fixed(services: JobServices, ctx: JobContext) -> int:
    """Resolve the bot's earlier threads whose lines the new commits changed; how many.

    After the review, so a failure here costs the sweep and never the review.
    """
    resolved = 0
    try:
        fixed = fixed_threads(await ctx.github.review_threads(), ctx.bot)
        if fixed:
            ctx.progress.note("resolving the threads the new commits fixed")
        for thread_id in fixed:
            await ctx.github.resolve_thread(thread_id)
            resolved += 1
    except GitHubError as error:
        services.log("review_threads_unresolved", job=ctx.job.id, error=str(error))
    return resolved


async def _answer_threads(
    services: JobServices, ctx: JobContext, ran: Ran, thread: ThreadContext
) -> tuple[str, ...]:
    """Reply in each review thread the job answers; resolve them once the change is
    pushed. The report's note of it.

    After the push, so a failure here is logged and costs the replies, never the work.
    """
    job_id, result, github = ctx.job.id, ran.result, ctx.github
    body = thread_answer(result, thread.pr_url)
    ctx.progress.note("answering in the review threads")
    answered: list[int] = []
    try:
        for top in thread.answer:
            await github.reply_in_thread(top, reply_key(job_id, top), body)
            answered.append(top)
    except GitHubError as error:
        services.log("thread_reply_failed", job=job_id, error=str(error))
    resolved = 0
    if result.changed and answered:
        try:
            for thread_id in threads_to_resolve(await github.review_threads(), answered):
                await github.resolve_thread(thread_id)
                resolved += 1
        except GitHubError as error:
            services.log("thread_resolve_failed", job=job_id, error=str(error))
    if not answered:
        return ()
    said = f"Answered in {_count(len(answered), 'review thread')}"
    return (f"{said}; resolved {resolved}." if result.changed else f"{said}.",)


async def _react(services: JobServices, github: RepoClient, request: JobRequest) -> None:
    """👀 on what asked: the comment, the review comment, or the issue or pull request."""
    subject: ReactionSubject = "issue"
    target = request.thread.number
    if request.trigger is TriggerKind.COMMENT:
        subject, target = "comment", request.trigger_id
    elif request.trigger is TriggerKind.REVIEW_COMMENT:
        subject, target = "review_comment", request.trigger_id
    try:
        await github.react(subject, target)
    except NeoError as error:  # an acknowledgement, not the work
        services.log("react_failed", error=str(error))
    except Exception:
        log.exception("reacting to the trigger of %s failed", request.thread.key)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"
