"""One claimed job, from its config to its report, in the order it happens.

`JobSteps.process` reads as the steps: the config and the requester's role
(together), who may run, the progress comment and a 👀 reaction, the thread,
the spec, `runner.job.run` with the comment edited live, the pull request,
the report. A stop request is `JobSteps.stop_request`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import zipfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

import httpx

from bot.config import RepoConfig
from bot.config import render_config_error as render_config_comment
from bot.github.app import CI_REPAIR_PERMISSIONS, WORKFLOW_JOB_PERMISSIONS, AppAuth
from bot.github.checks import Annotation, CheckRun, PullHead
from bot.github.client import DEFAULT_SPACERS, GitHubError, RepoClient, Spacers, trigger_kind
from bot.github.downloads import LogTail, download_tail, download_zip_tails
from bot.github.models import Comment, ReviewComment, Thread
from bot.jobs import Conclusion, Job, JobOutcome, JobRequest, JobState, conclusion_of
from bot.jobs import Thread as JobsThread
from bot.queue import JobQueue, LeaseLost, QueueError, SessionArchive, overran
from bot.worker.access import Access, unauthorised_run, unauthorised_stop
from bot.worker.budgets import (
    Allowance,
    OperatorBudgets,
    Over,
    Scope,
    allowance,
    bounded_cost,
    day_window,
    limits,
    over_text,
    spend_records,
    usd,
)
from bot.worker.config import ConfigResolver
from bot.worker.progress import Outcome, Progress, Throttle, render_progress, render_report
from bot.worker.prompt import (
    FailedCheck,
    InlineComment,
    Post,
    RedHead,
    ReviewLocation,
    build_repair_prompt,
)
from bot.worker.providers import unavailable, unavailable_text
from bot.worker.repair import (
    Owner,
    Skip,
    limit_text,
    made_by,
    owning_thread,
    repair_message,
    repairs_so_far,
    skip_reason,
)
from bot.worker.review import (
    all_folded,
    fixed_threads,
    review_outcome,
    review_payload,
    unrepeated,
)
from bot.worker.sessions import archive_of, read_session_files, write_session_files
from bot.worker.spec import Identity, ThreadContext, WorkerSettings, job_spec, task_title
from bot.worker.texts import (
    error_line,
    pr_body,
    run_outcome,
    stored_outcome,
    threadless_pr_body,
)
from bot.worker.threads import answered_threads, reply_key, thread_answer, threads_to_resolve
from runner import job as runner_job
from runner.errors import ConfigError, NeoError
from runner.git import MirrorCache
from runner.job import JobResult
from runner.session import SessionError
from runner.text import one_line

__all__ = ["JobSteps", "RunJob", "Running", "Stopped", "first", "log_event"]

log = logging.getLogger("neo.worker")

RunJob = Callable[..., Awaitable[JobResult]]
_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")

_REVIEW_COMMENT = "pull_request_review_comment."
_REVIEW = "pull_request_review."
# A CI repair reads at most this many failed checks, and of a run's ZIP this many logs.
_REPAIR_CHECKS = 5
_RUN_LOG_MEMBERS = 6
_LOG_TIMEOUT = 120.0


class Stopped(Exception):
    """The job's lease was lost or the worker is shutting down: publish nothing more."""


@dataclass
class Running:
    """What the worker and a job's heartbeat share while the job runs."""

    job: Job
    # The runner's stop: set by a cancel, a lost lease or the end of the grace period.
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lease_lost: bool = False
    cancel_requested: bool = False
    shutting_down: bool = False
    # The NEO_JOB_TIMEOUT (seconds) the job ran past, once it has.
    timed_out: float | None = None
    # What the job's result reports beside its outcome, once known.
    branch: str | None = None
    session_id: str | None = None
    # What today's budgets leave the run, and what the report says of them.
    allowance: Allowance | None = None
    notes: tuple[str, ...] = ()


def log_event(worker: str, event: str, **fields: Any) -> None:
    """One JSON log line; `ts` is the unix time."""
    line = {"event": event, "ts": round(time.time(), 3), "worker": worker, **fields}
    log.info(json.dumps(line, default=str))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSteps:
    """Runs one job at a time for the worker `name`; the worker holds the lease."""

    name: str
    queue: JobQueue
    app: AppAuth
    settings: WorkerSettings
    config: ConfigResolver
    access: Access
    clock: Callable[[], float]
    chore: Callable[[Awaitable[None]], None]
    edit_every: float = 3.0
    spacers: Spacers = DEFAULT_SPACERS
    run_job: RunJob = runner_job.run
    client_options: Mapping[str, Any] = field(default_factory=dict)
    mirrors: MirrorCache | None = None
    budgets: OperatorBudgets = field(default_factory=OperatorBudgets)
    # How often a job whose session another job holds looks again.
    session_wait: float = 2.0
    # Budgets count UTC days: the time of day, where `clock` may be monotonic.
    wall_clock: Callable[[], float] = time.time

    async def process(self, running: Running) -> None:
        """Run one claimed job to its end and record the outcome in the queue."""
        job = running.job
        request = job.request
        progress = Progress(job.id, clock=self.clock)
        progress.start()
        if request.kind == "cancel":
            await self.stop_request(running)
            return
        if request.mode == "repair":
            await self.repair_request(running)
            return
        threadless = request.thread.number == 0
        self._log("job_started", job=job.id, thread=request.thread.key, attempt=job.attempts)
        github: RepoClient | None = None
        comment: int | None = None
        try:
            github = await self.repo_client(request)
            # Reads only, and independent: together, so the comment comes sooner.
            default_branch, (config, config_error), level = await _together(
                github.default_branch(),
                self.config.resolve(github, request),
                self.access.permission(github, request),
            )
            allowed = (config or self.config.source.fallback()).allowed_users
            bots = (config or self.config.source.fallback()).allowed_bots
            if not await self.access.authorised(request, level, allowed, bots):
                if not threadless:
                    where = self.config.source.allowed_users_source()
                    await github.reply_once(
                        request.thread.number,
                        "unauthorised",
                        unauthorised_run(request, allowed, where),
                    )
                outcome = Outcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised")
            elif config is None:
                assert config_error is not None
                if not threadless:
                    await github.reply_once(
                        request.thread.number, "config-error", render_config_comment(config_error)
                    )
                    self.chore(self._react(github, request))
                outcome = Outcome(conclusion=Conclusion.FAILED, error=str(config_error))
            elif (refusal := self._unavailable(config)) is not None:
                # Before any comment, clone or sandbox: the run could not start.
                if not threadless:
                    key = f"provider-unavailable-{job.id}"
                    await github.reply_once(request.thread.number, key, refusal)
                outcome = Outcome(conclusion=Conclusion.FAILED, error=refusal)
            elif (refusal := await self._over_budget(running, config)) is not None:
                # The same shape: one comment, before any reaction, clone or model call.
                if not threadless:
                    key = f"over-budget-{job.id}"
                    await github.reply_once(request.thread.number, key, refusal)
                outcome = Outcome(conclusion=Conclusion.FAILED, error=refusal)
            else:
                if not threadless:
                    # The comment first: mutating calls are spaced a second apart,
                    # and the reaction can wait for its turn in the background.
                    comment = await github.progress_comment(
                        job.id, render_progress(progress.state, now=self.clock())
                    )
                    self.chore(self._react(github, request))
                outcome = await self._run(
                    running, github, config, default_branch, progress, comment
                )
                if running.notes:
                    outcome = replace(outcome, notes=running.notes)
        except Stopped:
            raise
        except Exception as error:
            outcome = _failed_outcome(job, error)
        await self._report(running, progress, outcome, github, comment)

    async def _report(
        self,
        running: Running,
        progress: Progress,
        outcome: Outcome,
        github: RepoClient | None,
        comment: int | None,
    ) -> None:
        """Turn the progress comment into the report and record the outcome in the queue."""
        self._check_alive(running)
        job = running.job
        outcome = _over_time(running, outcome)
        progress.finish(outcome.conclusion)
        report = render_report(progress.state, outcome)
        if github is not None and comment is not None:
            try:
                await github.update_progress(comment, report)
            except GitHubError as error:
                self._log("report_failed", job=job.id, error=str(error))
        stored = stored_outcome(
            outcome, report, branch=running.branch, session_id=running.session_id
        )
        await self._finish(running, stored)
        self._log("job_finished", job=job.id, conclusion=outcome.conclusion.value)

    async def stop_request(self, running: Running) -> None:
        """`@neo stop`: stop the thread's work if its author may start a run there.

        The same rule as for a run (`allowed_users`, allow-listed bots); an
        invalid config still has its defaults. Anyone else gets the one short
        reply, and the work goes on.
        """
        job = running.job
        request = job.request
        outcome = JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised")
        try:
            github = await self.repo_client(request)
            (config, _), level = await asyncio.gather(
                self.config.resolve(github, request), self.access.permission(github, request)
            )
            settings = config or self.config.source.fallback()
            allowed = settings.allowed_users
            if await self.access.authorised(request, level, allowed, settings.allowed_bots):
                applied = await self.queue.apply_cancel(job.id)
                outcome = JobOutcome(
                    conclusion=Conclusion.STOPPED,
                    cancelled=applied.cancelled,
                    cancel_requested=applied.cancel_requested,
                )
                self._log("stop_applied", job=job.id, **applied.as_result())
            else:
                self._log("stop_refused", job=job.id, author=request.author)
                if request.thread.number != 0:
                    where = self.config.source.allowed_users_source()
                    await github.reply_once(
                        request.thread.number,
                        "unauthorised",
                        unauthorised_stop(request, allowed, where),
                    )
        except (NeoError, QueueError) as error:
            outcome = JobOutcome(conclusion=Conclusion.FAILED, error=one_line(error, None))
            self._log("stop_failed", job=job.id, error=outcome.error)
        self._check_alive(running)
        await self._finish(running, outcome)

    def _unavailable(self, config: RepoConfig) -> str | None:
        """Why the service cannot run `config`'s providers (their keys are in its
        environment), or None."""
        source = self.config.source
        where = {
            key: f"from {source.overrides_source}"
            if key in source.overrides
            else f"from `{source.path}`"
            for key in ("provider", "fallback")
            if key in source.overrides or key in config.model_fields_set
        }
        problem = unavailable(config, os.environ, source=where)
        return None if problem is None else unavailable_text(problem)

    async def _over_budget(self, running: Running, config: RepoConfig) -> str | None:
        """Why today's spend stops the job from starting, or None; else what it may spend."""
        request = running.job.request
        found = limits(config.budgets, self.budgets, config_path=self.config.source.path)
        if not found:
            return None
        now = self.wall_clock()
        start, _ = day_window(now)
        spent: dict[Scope, float] = {}
        for limit in found:
            if limit.scope == "repository":
                spent["repository"] = await self.queue.spent_since(
                    start, repository=request.thread.repository
                )
            elif request.installation_id is not None:
                spent["installation"] = await self.queue.spent_since(
                    start, installation_id=request.installation_id
                )
        decided = allowance(spent, found, now)
        if isinstance(decided, Over):
            self._log("over_budget", job=running.job.id, scope=decided.limit.scope)
            return over_text(
                decided,
                repository=request.thread.repository,
                installation_id=request.installation_id,
            )
        running.allowance = decided
        running.notes = tuple(note for limit in found if (note := limit.note) is not None)
        return None

    async def _record_spend(self, running: Running, result: JobResult) -> None:
        """Store what the run cost; a failure to is logged, and the job's report still goes."""
        request = running.job.request
        records = spend_records(
            running.job.id,
            request.thread.repository,
            request.installation_id,
            result,
            self.wall_clock(),
        )
        try:
            await self.queue.record_spend(records)
        except QueueError as error:
            self._log("spend_not_recorded", job=running.job.id, error=str(error))

    async def repo_client(
        self, request: JobRequest, permissions: Mapping[str, str] | None = None
    ) -> RepoClient:
        """The job's github: every effect on its thread goes through it."""
        if request.installation_id is None:
            raise GitHubError("github: the delivery named no App installation")
        return await RepoClient.for_installation(
            self.app,
            request.installation_id,
            request.thread.repository,
            request.thread.number,
            spacers=self.spacers,
            permissions=permissions,
            **self.client_options,
        )

    async def _run(
        self,
        running: Running,
        github: RepoClient,
        config: RepoConfig,
        default_branch: str,
        progress: Progress,
        comment: int | None,
    ) -> Outcome:
        request = running.job.request
        if request.mode == "review" and not request.thread.is_pull_request:
            raise ConfigError("only a pull request can be reviewed")
        thread: ThreadContext | None = None
        if request.thread.number != 0:
            thread = await self._read_thread(request, github)
        assert request.installation_id is not None
        # Pushing under .github/workflows/ takes the `workflows` permission.
        permissions = WORKFLOW_JOB_PERMISSIONS if config.allow_workflow_edits else None
        token = await self.app.installation_token(
            request.installation_id, request.thread.repository, permissions
        )
        who = Identity(
            bot=await self.app.bot_login(),
            token=token.token,
            unchecked=await self.access.unchecked(request),
        )
        spec, own_branch = job_spec(
            running.job,
            config,
            self.settings,
            default_branch=default_branch,
            thread=thread,
            who=who,
        )
        bounded = bounded_cost(spec.settings.max_cost_usd, running.allowance)
        if bounded != spec.settings.max_cost_usd:
            assert running.allowance is not None
            spec = replace(spec, settings=replace(spec.settings, max_cost_usd=bounded))
            left = running.allowance
            running.notes += (
                f"Today's {left.limit.scope} budget has {usd(left.usd)} left"
                f" ({left.limit.source}), so this run may spend at most that.",
            )
        running.branch = spec.work_branch
        self._log("spec_ready", job=running.job.id, branch=spec.work_branch)
        project_context = None
        if request.thread.is_pull_request:
            # The PR's own AGENTS.md could rewrite Neo's instructions: the default branch's.
            agents = await github.read_file("AGENTS.md", ref=default_branch)
            project_context = agents or ""
        result = await self._run_live(running, spec, github, progress, comment, project_context)
        await self._record_spend(running, result)
        running.session_id = result.session_id
        self._check_alive(running)
        if result.review is not None:
            assert thread is not None
            return await self._submit_review(running, github, result, thread, progress)
        cancelled_by = None
        if conclusion_of(result) is Conclusion.CANCELLED:
            cancelled_by = await self._cancelled_by(running.job)
        pr_url: str | None = None
        draft_refused = False
        if result.changed:
            progress.note("opening the pull request")
            if own_branch:
                assert thread is not None
                pr_url = thread.pr_url
            else:
                pr = await github.open_or_update_pr(
                    head=spec.work_branch,
                    base=default_branch,
                    title=thread.title if thread else task_title(request.instruction),
                    body=pr_body(result, request)
                    if thread
                    else threadless_pr_body(result, request),
                    # Work a budget cut short is never ready for review.
                    draft=config.draft or result.incomplete,
                )
                pr_url = pr.url
                draft_refused = pr.draft_refused
        if thread is not None and thread.answer:
            await self._answer_threads(running, github, result, thread, progress)
        return run_outcome(
            result,
            pr_url=pr_url,
            draft_refused=draft_refused,
            cancelled_by=cancelled_by,
            config_path=self.config.source.path,
        )

    async def _submit_review(
        self,
        running: Running,
        github: RepoClient,
        result: JobResult,
        thread: ThreadContext,
        progress: Progress,
    ) -> Outcome:
        """The one review of a review job; comments GitHub will not place go in its summary."""
        assert result.review is not None
        progress.note("submitting the review")
        draft = unrepeated(result.review, thread.earlier)
        key = f"review-{running.job.id}"
        body, comments = review_payload(draft)
        try:
            review = await github.submit_review(key, body, comments)
        except GitHubError as error:
            if error.status != 422 or not comments:
                raise
            # GitHub's diff and the host's disagree on a line: one review all the same.
            self._log("review_inline_refused", job=running.job.id, error=str(error))
            draft = all_folded(draft)
            body, comments = review_payload(draft)
            review = await github.submit_review(key, body, comments)
        resolved = await self._resolve_fixed(running, github, progress)
        return review_outcome(result, draft, review.url, resolved=resolved)

    async def _resolve_fixed(self, running: Running, github: RepoClient, progress: Progress) -> int:
        """Resolve the bot's earlier threads whose lines the new commits changed; how many.

        After the review, so a failure here costs the sweep and never the review.
        """
        resolved = 0
        try:
            fixed = fixed_threads(await github.review_threads(), github.bot_login)
            if fixed:
                progress.note("resolving the threads the new commits fixed")
            for thread_id in fixed:
                await github.resolve_thread(thread_id)
                resolved += 1
        except GitHubError as error:
            self._log("review_threads_unresolved", job=running.job.id, error=str(error))
        return resolved

    async def _answer_threads(
        self,
        running: Running,
        github: RepoClient,
        result: JobResult,
        thread: ThreadContext,
        progress: Progress,
    ) -> None:
        """Reply in each review thread the job answers; resolve them once the change is pushed.

        After the push, so a failure here is logged and costs the replies, never the work.
        """
        job_id = running.job.id
        body = thread_answer(result, thread.pr_url)
        progress.note("answering in the review threads")
        answered: list[int] = []
        try:
            for top in thread.answer:
                await github.reply_in_thread(top, reply_key(job_id, top), body)
                answered.append(top)
        except GitHubError as error:
            self._log("thread_reply_failed", job=job_id, error=str(error))
        resolved = 0
        if result.changed and answered:
            try:
                for thread_id in threads_to_resolve(await github.review_threads(), answered):
                    await github.resolve_thread(thread_id)
                    resolved += 1
            except GitHubError as error:
                self._log("thread_resolve_failed", job=job_id, error=str(error))
        if answered:
            said = f"Answered in {_count(len(answered), 'review thread')}"
            running.notes += (f"{said}; resolved {resolved}." if result.changed else f"{said}.",)

    async def _run_live(
        self,
        running: Running,
        spec: runner_job.JobSpec,
        github: RepoClient,
        progress: Progress,
        comment: int | None,
        project_context: str | None,
    ) -> JobResult:
        """`runner.job.run`, with the progress comment edited while it works."""
        changed = asyncio.Event()

        def on_event(event: Any) -> None:
            progress.apply(event)
            changed.set()

        done = asyncio.Event()
        live = None
        if comment is not None:
            live = asyncio.create_task(self._live(github, comment, progress, changed, done))
        options: dict[str, Any] = {}
        if self.mirrors is not None:
            options["cache"] = self.mirrors
        # The same id the runner gives the thread's session; a job without a
        # thread key starts afresh, and leaves nothing a later job continues.
        archive = archive_of(self.queue) if spec.session_key else None
        session_id = runner_job.session_id_for(spec.session_key) if spec.session_key else None
        loaded = False  # only a run that started from the archived copy saves over it
        try:
            held = spec.session_key is None or await self._hold_session(
                running, spec.session_key, progress, changed
            )
            # Stopped while another job held the session: that job's copy is the
            # truth, so this one neither loads nor saves it.
            if held and archive is not None and session_id is not None:
                try:
                    found = await archive.load_session(session_id)
                except QueueError as error:
                    # Not without it: the follow-up would start a new conversation.
                    raise SessionError(f"cannot load the thread's session: {error}") from None
                await asyncio.to_thread(write_session_files, spec.data_dir, session_id, found)
                loaded = True
            return await self.run_job(
                spec,
                on_event=on_event,
                stop=running.stop,
                project_context=project_context,
                **options,
            )
        finally:
            done.set()
            if live is not None:
                await live
            if loaded and archive is not None and session_id is not None:
                await self._archive_session(running, archive, spec.data_dir, session_id)

    async def _archive_session(
        self, running: Running, archive: SessionArchive, data_dir: Path, session_id: str
    ) -> None:
        """Save the session the run left, for whichever host takes the thread's next job."""
        job = running.job.id
        try:
            files = await asyncio.to_thread(read_session_files, data_dir, session_id)
            if files is None:
                return  # the agent never started: the archived copy stands
            saved = await archive.save_session(job, self.name, session_id, files)
        except (QueueError, SessionError) as error:
            self._log("session_save_failed", job=job, session=session_id, error=str(error))
            return
        if not saved:
            # Another worker has the job now: its session is the one that counts.
            self._log("session_save_refused", job=job, session=session_id, reason="lease lost")

    async def _hold_session(
        self, running: Running, session: str, progress: Progress, changed: asyncio.Event
    ) -> bool:
        """Wait until no other running job uses `session` (an issue's and its pull
        request's jobs share one), then hold it for this job: True.

        A stop while waiting ends the wait (False); the runner then ends the job
        as stopped.
        """
        job = running.job
        waited = False
        while not await self._held(running, session):
            if not waited:
                waited = True
                self._log("session_busy", job=job.id, session=session)
                progress.note("waiting for another job on this conversation to finish")
                changed.set()
            await first(running.stop.wait(), asyncio.sleep(self.session_wait))
            self._check_alive(running)
            if running.stop.is_set():
                return False
        return True

    async def _held(self, running: Running, session: str) -> bool:
        try:
            return await self.queue.hold_session(running.job.id, self.name, session)
        except LeaseLost:
            running.lease_lost = True
            self._check_alive(running)
            raise

    async def _live(
        self,
        github: RepoClient,
        comment: int,
        progress: Progress,
        changed: asyncio.Event,
        done: asyncio.Event,
    ) -> None:
        """Edit the progress comment while the job runs: throttled, only when it changed."""
        throttle = Throttle(self.edit_every)
        now = self.clock()
        throttle.edited(render_progress(progress.state, now=now), now)
        while not done.is_set():
            now = self.clock()
            text = render_progress(progress.state, now=now)
            delay = throttle.delay(text, now)
            if delay == 0.0:
                try:
                    await github.update_progress(comment, text)
                except GitHubError as error:  # the report still gets written at the end
                    self._log("progress_edit_failed", error=str(error))
                throttle.edited(text, now)
                delay = self.edit_every
            changed.clear()
            wait = self.edit_every if delay is None else max(delay, 0.05)
            await first(done.wait(), asyncio.sleep(wait))

    async def _react(self, github: RepoClient, request: JobRequest) -> None:
        kind = trigger_kind(request.event)
        target = request.thread.number if kind == "issue" else request.trigger_id
        try:
            await github.react(kind, target)
        except NeoError as error:  # an acknowledgement, not the work
            self._log("react_failed", error=str(error))
        except Exception:
            log.exception("reacting to the trigger of %s failed", request.thread.key)

    async def _cancelled_by(self, job: Job) -> str | None:
        """The author of the cancel request that stopped `job`, when the queue shows one."""
        try:
            # Any state: the request that stopped it may not have finished yet.
            jobs = await self.queue.list(repository=job.request.thread.repository, limit=100)
        except QueueError:
            return None
        for other in jobs:
            if other.request.kind != "cancel" or other.result is None:
                continue
            if job.id in other.result.cancel_requested:
                return other.request.author
        return None

    def _check_alive(self, running: Running) -> None:
        if running.lease_lost:
            self._log("abandoned", job=running.job.id, reason="lease lost")
            raise Stopped
        if running.shutting_down:
            raise Stopped

    async def _finish(self, running: Running, outcome: JobOutcome) -> None:
        try:
            await self.queue.finish(running.job.id, self.name, outcome)
        except LeaseLost:
            self._log("finish_lost", job=running.job.id)

    def _log(self, event: str, **fields: Any) -> None:
        log_event(self.name, event, **fields)

    # --- CI repair: a red check on a pull request Neo opened ----------------------

    async def repair_request(self, running: Running) -> None:
        """Repair the red head of a pull request Neo opened, in the session that made it.

        Nothing shows on GitHub when it is not Neo's to repair; else the
        progress comment of the thread that made the pull request is edited
        (one on the pull request when none is found), or, when the repairs in
        a row are spent, one comment says so.
        """
        job = running.job
        request = job.request
        progress = Progress(job.id, clock=self.clock)
        progress.start()
        self._log("job_started", job=job.id, thread=request.thread.key, attempt=job.attempts)
        github: RepoClient | None = None
        comment: int | None = None
        try:
            github = await self.repo_client(request, CI_REPAIR_PERMISSIONS)
            outcome, comment = await self._repair(running, github, progress)
        except Stopped:
            raise
        except Exception as error:
            outcome = _failed_outcome(job, error)
        await self._report(running, progress, outcome, github, comment)

    def _repair_skipped(self, running: Running, reason: Skip) -> Outcome:
        self._log("ci_repair_skipped", job=running.job.id, reason=reason.value)
        return Outcome(conclusion=Conclusion.NO_CHANGES, error=f"no CI repair: {reason.value}")

    async def _repair(
        self, running: Running, github: RepoClient, progress: Progress
    ) -> tuple[Outcome, int | None]:
        """The outcome, and the comment the report goes to (None: nothing to report)."""
        job = running.job
        request = job.request
        default_branch, (config, _) = await asyncio.gather(
            github.default_branch(), self.config.resolve(github, request)
        )
        # An invalid file: its comment comes with the next mention, not with CI.
        if config is None or not config.ci_repair.enabled:
            return self._repair_skipped(running, Skip.DISABLED), None
        pull = await github.pull_head()
        bot = github.bot_login
        repository = request.thread.repository
        reason = skip_reason(pull, red_sha=request.head_sha, bot=bot, repository=repository)
        if reason is not None:
            return self._repair_skipped(running, reason), None
        commit = await github.head_commit(pull.head_sha)
        if not made_by(commit, bot):
            return self._repair_skipped(running, Skip.NOT_NEOS_PUSH), None
        failed = tuple(run for run in await github.check_runs(pull.head_sha) if run.failed)
        if not failed:
            return self._repair_skipped(running, Skip.GREEN), None
        owner = owning_thread(pull.head_ref, config.branch_prefix, pull.number, repository)
        if await self._thread_busy(owner.thread, job.id):
            # Its push starts CI again; two runs must not share one session and branch.
            return self._repair_skipped(running, Skip.BUSY), None
        done = repairs_so_far(commit.message)
        limit = config.ci_repair.attempts
        if done >= limit:
            # The service's handle; `neo action` has none, and runs no repair.
            handle = str(getattr(self.settings, "handle", "@neo"))
            key = f"ci-repair-limit-{pull.head_sha}"
            await github.reply_once(pull.number, key, limit_text(done, failed, handle))
            self._log("ci_repair_limit", job=job.id, attempts=done, sha=pull.head_sha)
            error = f"CI is still red after {done} repair attempts"
            return Outcome(conclusion=Conclusion.NO_CHANGES, error=error), None
        if (refusal := self._unavailable(config)) is not None:
            await github.reply_once(pull.number, f"provider-unavailable-{job.id}", refusal)
            return Outcome(conclusion=Conclusion.FAILED, error=refusal), None
        if (refusal := await self._over_budget(running, config)) is not None:
            await github.reply_once(pull.number, f"over-budget-{job.id}", refusal)
            return Outcome(conclusion=Conclusion.FAILED, error=refusal), None
        # The comment of the work that made the pull request goes on telling its story.
        text = render_progress(progress.state, now=self.clock())
        try:
            comment = await github.latest_progress_comment(owner.thread.number)
        except GitHubError as error:
            if error.status != 404:
                raise
            comment = None  # the branch names a thread that is gone (deleted, transferred)
        if comment is None:
            comment = await github.progress_comment(job.id, text)
        else:
            await github.update_progress(comment, text)
        progress.note("reading the failed checks")
        checks, run_logs = await self._read_failures(running, github, failed)
        red = RedHead(
            pr_url=pull.html_url,
            number=pull.number,
            branch=pull.head_ref,
            head_sha=pull.head_sha,
            attempt=done + 1,
            attempts=limit,
        )
        prompt = build_repair_prompt(repository, red, checks, run_logs)
        outcome = await self._run_repair(
            running, github, config, default_branch, progress, comment, pull, owner, red, prompt
        )
        if running.notes:
            outcome = replace(outcome, notes=running.notes)
        return outcome, comment

    async def _thread_busy(self, thread: JobsThread, job_id: int) -> bool:
        """Whether another job of `thread` is queued or running."""
        try:
            jobs = await self.queue.list(repository=thread.repository, limit=100)
        except QueueError:
            return False
        return any(
            other.id != job_id
            and other.request.thread.key == thread.key
            and other.request.kind == "run"
            and other.state in (JobState.QUEUED, JobState.RUNNING)
            for other in jobs
        )

    async def _read_failures(
        self, running: Running, github: RepoClient, failed: tuple[CheckRun, ...]
    ) -> tuple[tuple[FailedCheck, ...], tuple[LogTail, ...]]:
        """Each failed check's annotations and log tail; a workflow run's logs (a ZIP).

        Context, not the work: what GitHub does not give is logged and left out.
        """
        request = running.job.request
        whole_run = request.event.startswith("workflow_run.")
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
                    self._log("ci_log_missing", job=running.job.id, check=run.id, error=str(error))
                checks.append(FailedCheck(run=run, annotations=notes, logs=logs))
            if whole_run:
                try:
                    url = await github.log_location("run", request.trigger_id)
                    run_logs = await download_zip_tails(plain, url, members=_RUN_LOG_MEMBERS)
                except (GitHubError, httpx.HTTPError, ValueError, zipfile.BadZipFile) as error:
                    self._log(
                        "ci_log_missing",
                        job=running.job.id,
                        run=request.trigger_id,
                        error=str(error),
                    )
        return tuple(checks), run_logs

    async def _run_repair(
        self,
        running: Running,
        github: RepoClient,
        config: RepoConfig,
        default_branch: str,
        progress: Progress,
        comment: int,
        pull: PullHead,
        owner: Owner,
        red: RedHead,
        prompt: str,
    ) -> Outcome:
        """The runner on the pull request's own branch, in the owning thread's session."""
        request = running.job.request
        assert request.installation_id is not None
        # The token the job's reads had (one mint), with `workflows` when edits are allowed.
        permissions = CI_REPAIR_PERMISSIONS
        if config.allow_workflow_edits:
            permissions = {**WORKFLOW_JOB_PERMISSIONS, **CI_REPAIR_PERMISSIONS}
        token = await self.app.installation_token(
            request.installation_id, request.thread.repository, permissions
        )
        who = Identity(bot=github.bot_login, token=token.token)
        thread = ThreadContext(
            title=pull.title,
            opening=Post(author=pull.author, association="NONE", body=""),
            comments=(),
            requester_id=None,
            head_ref=pull.head_ref,
            same_repository=True,
            pr_url=pull.html_url,
        )
        spec, _ = job_spec(
            running.job,
            config,
            self.settings,
            default_branch=default_branch,
            thread=thread,
            who=who,
        )
        spec = replace(
            spec,
            prompt=prompt,
            session_key=owner.thread.key,
            commit_message=repair_message(pull.title, owner.thread.number, red.attempt),
            # No one asked: the commit is Neo's alone, which is what the next red head checks.
            co_author=None,
            settings=replace(
                spec.settings,
                max_cost_usd=bounded_cost(spec.settings.max_cost_usd, running.allowance),
            ),
        )
        running.branch = spec.work_branch
        self._log("spec_ready", job=running.job.id, branch=spec.work_branch, attempt=red.attempt)
        agents = await github.read_file("AGENTS.md", ref=default_branch)
        result = await self._run_live(running, spec, github, progress, comment, agents or "")
        await self._record_spend(running, result)
        running.session_id = result.session_id
        self._check_alive(running)
        cancelled_by = None
        if conclusion_of(result) is Conclusion.CANCELLED:
            cancelled_by = await self._cancelled_by(running.job)
        return run_outcome(
            result,
            pr_url=pull.html_url if result.changed else None,
            cancelled_by=cancelled_by,
            config_path=self.config.source.path,
        )

    # --- the thread, as GitHub gives it ---------------------------------------------

    async def _read_thread(self, request: JobRequest, github: RepoClient) -> ThreadContext:
        read = await github.read_thread(pull_request=request.thread.is_pull_request)
        thread = thread_context(read, request)
        from_workflow = request.instruction_from_workflow
        if from_workflow and request.event.startswith("issue_comment."):
            thread.trigger_post = next(
                (c for c in thread.comments if c.id == request.trigger_id), None
            )
        if request.mode == "review":
            # The diff comes from the host's git (the runner's); the threads from GitHub.
            thread.earlier = tuple(
                InlineComment(post=_post(c.comment), location=_location(c))
                for c in await github.pull_review_comments()
            )
        elif thread.pr_url is not None:
            try:
                thread.diff = await github.pull_request_diff()
            except GitHubError as error:
                # Context, not the work: the model can still read the branch with git.
                thread.diff_missing = f"GitHub did not give it ({error})"
        own = read.pull is not None and (read.pull.author or "").lower() == github.bot_login.lower()
        if request.event.startswith(_REVIEW_COMMENT):
            inline = await github.read_review_comment(request.trigger_id)
            if own:
                thread.answer = answered_threads([inline])
            thread.review = _location(inline)
            if inline.comment.author_id is not None:
                thread.requester_id = inline.comment.author_id
            if from_workflow:
                thread.trigger_post = _post(inline.comment)
        elif request.event.startswith(_REVIEW) and request.thread.is_pull_request:
            if from_workflow:
                thread.trigger_post = await self._review_post(github, request)
            comments = await github.read_review_comments(request.trigger_id)
            thread.inline = tuple(
                InlineComment(post=_post(c.comment), location=_location(c)) for c in comments
            )
            if own:
                thread.answer = answered_threads(comments)
        return thread

    async def _review_post(self, github: RepoClient, request: JobRequest) -> Post | None:
        """The review that started a workflow's run, or None when GitHub does not give it.

        Context only (the workflow's prompt is the task), so a failure is logged, not fatal.
        """
        try:
            review = await github.read_review(request.trigger_id)
        except GitHubError as error:
            self._log("review_read_failed", review=request.trigger_id, error=str(error))
            return None
        return Post(
            author=review.author,
            association=review.association,
            body=review.body,
            created_at=review.submitted_at,
            id=review.id,
        )


def _failed_outcome(job: Job, error: Exception) -> Outcome:
    """A job's failure as one line: ours to fix (a traceback in the log) or Neo's kind."""
    if isinstance(error, NeoError):
        return Outcome(conclusion=Conclusion.FAILED, error=error_line(error))
    log.error("job %s failed unexpectedly", job.id, exc_info=error)
    return Outcome(
        conclusion=Conclusion.FAILED,
        error=f"internal error ({type(error).__name__}); the service log has details",
    )


def thread_context(read: Thread, request: JobRequest) -> ThreadContext:
    """What the prompt needs of a thread as GitHub gave it; `request` names the trigger."""
    issue = read.issue
    opening = Post(
        author=issue.author,
        association=issue.association,
        body=issue.body,
        created_at=issue.created_at,
    )
    comments = tuple(_post(c) for c in read.comments)
    requester_id = next((c.author_id for c in read.comments if c.id == request.trigger_id), None)
    thread = ThreadContext(issue.title, opening, comments, requester_id)
    if read.pull is not None:
        head_repo = read.pull.head_repository
        thread.head_ref = read.pull.head_ref
        thread.same_repository = (head_repo or "").lower() == request.thread.repository.lower()
        thread.pr_url = read.pull.html_url
    return thread


def _post(comment: Comment) -> Post:
    return Post(
        author=comment.author,
        association=comment.association,
        body=comment.body,
        created_at=comment.created_at,
        is_bot=comment.author_is_bot,
        id=comment.id,
    )


def _location(inline: ReviewComment) -> ReviewLocation:
    return ReviewLocation(
        path=inline.path,
        line=inline.line,
        start_line=inline.start_line,
        side=inline.side,
        diff_hunk=inline.diff_hunk,
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


async def _together(
    one: Awaitable[_A], two: Awaitable[_B], three: Awaitable[_C]
) -> tuple[_A, _B, _C]:
    """Await the three at once; the first failure is raised once all have ended."""
    results = await asyncio.gather(one, two, three, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast("tuple[_A, _B, _C]", tuple(results))


def _over_time(running: Running, outcome: Outcome) -> Outcome:
    """A job stopped by NEO_JOB_TIMEOUT failed, whatever its stopped run concluded.

    What it published (a draft pull request of the work so far) stays named.
    """
    if running.timed_out is None:
        return outcome
    return replace(outcome, conclusion=Conclusion.FAILED, error=overran(running.timed_out))


async def first(*waits: Awaitable[Any]) -> None:
    """Wait until the first of `waits` is done; cancel the others."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
