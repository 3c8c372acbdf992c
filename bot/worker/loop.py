"""The worker: takes jobs from the queue and runs each from trigger to report.

    worker = Worker(queue, app, settings, name="host-1:0", concurrency=2)
    await worker.run(stop)  # until `stop` is set, then drains

One job, in order: the repository's config from the default branch, or when
it has none from the owner's `.github` repository (used whole, never
merged), with the worker's overrides on top (`neo action`'s inputs), read
together with the requester's permission; an unauthorised request gets one
short reply per thread and runs nothing, an invalid config one comment
naming the field, and nothing runs. Then the job's one progress
comment and, behind it, a 👀 reaction on the trigger; the task prompt from
the thread (for a pull request with its diff, for a review comment with its
file, lines and hunk), `runner.job.run` with the comment edited live as the
agent works, then the draft pull request and the final report in the same
comment. Every effect goes through `Publisher`, which finds what an earlier
attempt of the same job made, so a retried job never duplicates a comment
or a pull request (docs/architecture.md, rule 5).

A stop request (`@neo stop`) is a job too, claimed even while every run
slot is taken: its author is checked by the same rule as a run's, and only
then does the queue cancel the thread's queued run and ask its running one
to stop; anyone else gets the one short reply and the work goes on.

A job without a thread (`thread.number == 0`: a schedule's, or `neo action`'s
on `workflow_dispatch` or `schedule`) has only its instruction and the branch
it names. It gets no reaction, no thread read and no progress comment; its
prompt is the instruction quoted as data; it works on its branch from the
default branch, continuing the branch when it exists, in a fresh session;
and it opens the draft pull request from that branch, or updates the one
open from it, so each schedule keeps one pull request. Who may ask: a
thread-less job whose author is Neo's own bot login, or empty, was asked for
by the repository itself (the default branch's `.github/neo.yml` or a
workflow file) and runs without a permission check; one that names any
other author is checked like a mention (a user needs a role in
`allowed_users`, a bot must be allow-listed).

Every job's result in the queue carries `conclusion`, `pr_url`, `error`,
`branch`, `session_id`, `cost_usd` and `report`: the final report's
Markdown, what the progress comment gets, rendered for thread-less jobs too.

Leases: each running job is heartbeated; a lost lease or a requested cancel
sets the runner's `stop`. A lost lease publishes nothing more (the job is
someone else's now). A job whose lease expired on its last attempt is failed
by the queue; the worker that notices turns its progress comment, if it has
one, into the failed report. On shutdown the worker takes no new jobs, waits
up to `grace` seconds for running ones, then stops and releases them for retry.

Every failure ends as one line in the report and in the job's result; the
traceback goes to the log only. Log lines are JSON with `ts`, the unix time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from pydantic import ValidationError

from bot.config.repo import CONFIG_PATH, RepoConfig, RepoConfigError, parse_repo_config
from bot.config.repo import render_config_error as render_config_comment
from bot.github.app import CONFIG_PERMISSIONS, WORKFLOW_JOB_PERMISSIONS, AppAuth, GitHubAuthError
from bot.github.client import DEFAULT_SPACERS, GitHubError, Publisher, Spacers, trigger_kind
from bot.jobs import Job, JobRequest, JobState, RequestKind
from bot.queue import JobQueue, LeaseLost, QueueError
from bot.worker.progress import (
    Conclusion,
    Outcome,
    Progress,
    Throttle,
    job_marker,
    neutralise,
    render_progress,
    render_report,
)
from bot.worker.prompt import (
    InlineComment,
    Post,
    ReviewLocation,
    Trigger,
    build_instruction_prompt,
    build_task_prompt,
)
from runner import job as runner_job
from runner.errors import ConfigError, NeoError
from runner.git import DiffStat, MirrorCache
from runner.job import JobResult, JobSpec
from runner.text import one_line

if TYPE_CHECKING:
    from githubkit import GitHub

__all__ = ["OWNER_CONFIG_TTL", "RunJob", "Worker", "WorkerSettings", "noreply_email"]

log = logging.getLogger("neo.worker")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
RunJob = Callable[..., Awaitable[JobResult]]
_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")

# How long an owner's `.github` repository the App cannot read is not asked
# about again: without the cache every job pays a token request GitHub refuses.
OWNER_CONFIG_TTL = 300.0

_COMMENT_EVENTS = ("issue_comment.", "pull_request_review_comment.", "pull_request_review.")
_REVIEW_COMMENT = "pull_request_review_comment."
_REVIEW = "pull_request_review."
# Where an owner keeps settings for all its repositories (as Probot apps do).
_OWNER_CONFIG_REPO = ".github"
# What GitHub answers for a repository the installation cannot see or read.
_NOT_THERE = frozenset({403, 404, 422})
_CONCLUSIONS = {
    "changed": Conclusion.SUCCESS,
    "no_changes": Conclusion.NO_CHANGES,
    "failed": Conclusion.FAILED,
    "cancelled": Conclusion.CANCELLED,
}
_STATES = {
    Conclusion.SUCCESS: JobState.SUCCEEDED,
    Conclusion.NO_CHANGES: JobState.SUCCEEDED,
    # Not done: `neo jobs retry` goes on with the same branch and session.
    Conclusion.INCOMPLETE: JobState.FAILED,
    Conclusion.FAILED: JobState.FAILED,
    Conclusion.CANCELLED: JobState.CANCELLED,
}


def noreply_email(login: str, user_id: int | None = None) -> str:
    """GitHub's no-reply address of `login`, the form that links commits to the account."""
    if user_id is not None:
        return f"{user_id}+{login}@users.noreply.github.com"
    return f"{login}@users.noreply.github.com"


class WorkerSettings(Protocol):
    """What the worker reads of `bot.config.settings.Settings`; `neo action` may pass its own."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def sandbox(self) -> str: ...
    @property
    def sandbox_image(self) -> str: ...
    @property
    def allowed_bots(self) -> frozenset[str]: ...
    @property
    def git_url(self) -> str: ...


class _Stopped(Exception):
    """The job's lease was lost or the worker is shutting down: publish nothing more."""


@dataclass
class _Running:
    """What the worker and a job's heartbeat share while the job runs."""

    job: Job
    # The runner's stop: set by a cancel, a lost lease or the end of the grace period.
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lease_lost: bool = False
    cancel_requested: bool = False
    shutting_down: bool = False
    # What the job's result reports beside its outcome, once known.
    branch: str | None = None
    session_id: str | None = None


@dataclass
class _Thread:
    """What the worker read about the thread before the run."""

    title: str
    opening: Post
    comments: tuple[Post, ...]
    requester_id: int | None
    # A pull request's head: its branch, and whether it lives in the repository.
    head_ref: str | None = None
    same_repository: bool = True
    pr_url: str | None = None
    # A pull request's diff against its base, or why it is missing.
    diff: str | None = None
    diff_missing: str | None = None
    # A review comment's place in the diff; a review's inline comments.
    review: ReviewLocation | None = None
    inline: tuple[InlineComment, ...] = ()
    # For a workflow's task: the comment or review that started the run, as read.
    trigger_post: Post | None = None


class Worker:
    """Runs up to `concurrency` jobs of `queue` at once as `name`.

    `wakeup`, set by whoever queues a job in this process (`neo serve`'s
    intake), makes the worker claim at once instead of at its next poll.
    `mirrors` is the process's mirror cache, kept across jobs so that each
    clone finds a ready spare tree; without one, each job makes its own.

    `config_path` is the settings file read from the default branch, of the
    repository and, failing that, of the owner's `.github` repository.
    `config_overrides` (fields of `RepoConfig`, e.g. `neo action`'s inputs,
    named by `overrides_source` in messages) win over that file: they are
    checked by the same model, here once, and again merged with each file.
    """

    def __init__(
        self,
        queue: JobQueue,
        app: AppAuth,
        settings: WorkerSettings,
        *,
        name: str,
        concurrency: int = 1,
        lease: float = 60.0,
        heartbeat_every: float | None = None,
        requeue_every: float | None = None,
        poll_every: float = 1.0,
        edit_every: float = 3.0,
        grace: float = 30.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        spacers: Spacers = DEFAULT_SPACERS,
        run_job: RunJob = runner_job.run,
        publisher_options: dict[str, Any] | None = None,
        wakeup: asyncio.Event | None = None,
        mirrors: MirrorCache | None = None,
        config_path: str = CONFIG_PATH,
        config_overrides: Mapping[str, Any] | None = None,
        overrides_source: str = "the worker's settings",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.config_path = config_path.strip("/") or CONFIG_PATH
        self.overrides_source = overrides_source
        self._overrides = _valid_overrides(config_overrides or {})
        self.queue = queue
        self.app = app
        self.settings = settings
        self.name = name
        self.concurrency = concurrency
        self.lease = lease
        # A heartbeat may be late or lost a few times before the lease runs out.
        self.heartbeat_every = lease / 4 if heartbeat_every is None else heartbeat_every
        self.requeue_every = lease / 2 if requeue_every is None else requeue_every
        self.poll_every = poll_every
        self.edit_every = edit_every
        self.grace = grace
        self.wakeup = wakeup
        self.mirrors = mirrors
        self._clock = clock
        self._sleep = sleep
        self._spacers = spacers
        self._run_job = run_job
        self._publisher_options = dict(publisher_options or {})
        self._running: dict[int, tuple[_Running, asyncio.Task[None]]] = {}
        # Reports of jobs the queue gave up on, and reactions, written in the background.
        self._chores: set[asyncio.Task[None]] = set()
        # Owners whose `.github` repository the App cannot read: until when.
        self._unreadable: dict[tuple[int, str], float] = {}

    # --- the loop ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Take and run jobs until `stop` is set; then drain within the grace period."""
        await self._requeue_expired()
        last_requeue = self._clock()
        wake = asyncio.Event()
        waits: list[Callable[[], Awaitable[Any]]] = [stop.wait, wake.wait]
        if self.wakeup is not None:
            waits.append(self.wakeup.wait)
        while not stop.is_set():
            if self._clock() - last_requeue >= self.requeue_every:
                await self._requeue_expired()
                last_requeue = self._clock()
            # Cleared before claiming: a job queued from here on sets it again.
            wake.clear()
            if self.wakeup is not None:
                self.wakeup.clear()
            while not stop.is_set():
                # With every run slot taken, stop requests are still taken:
                # they are quick, and the runs they stop are what fills the slots.
                only: RequestKind | None = None if self._runs() < self.concurrency else "cancel"
                try:
                    job = await self.queue.claim(self.name, self.lease, only=only)
                except QueueError as error:
                    self._log("claim_failed", error=str(error))
                    job = None
                if job is None:
                    break
                self._start(job, wake)
            await _first(*(wait() for wait in waits), self._sleep(self.poll_every))
        await self._drain()

    def _runs(self) -> int:
        """Run jobs going on here (stop requests take no slot)."""
        return sum(1 for running, _ in self._running.values() if running.job.request.kind == "run")

    def _start(self, job: Job, wake: asyncio.Event) -> None:
        running = _Running(job)
        task = asyncio.create_task(self._guarded(running), name=f"neo-job-{job.id}")
        self._running[job.id] = (running, task)

        def done(_: asyncio.Task[None]) -> None:
            self._running.pop(job.id, None)
            wake.set()

        task.add_done_callback(done)

    async def _drain(self) -> None:
        """Let running jobs finish within `grace`; stop and release the rest."""
        if self._chores:
            await asyncio.wait(list(self._chores), timeout=self.grace)
            for chore in list(self._chores):
                chore.cancel()
        if not self._running:
            return
        tasks = [task for _, task in self._running.values()]
        await asyncio.wait(tasks, timeout=self.grace)
        late = list(self._running.values())
        for running, _ in late:
            running.shutting_down = True
            running.stop.set()
        if late:
            # The runner answers `stop` by cancelling the agent and removing
            # its sandbox; give that a moment, then cut it short.
            await asyncio.wait([task for _, task in late], timeout=10.0)
        for running, task in late:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            with contextlib.suppress(QueueError):
                await self.queue.release(running.job.id, self.name)
            self._log("released", job=running.job.id)

    async def _requeue_expired(self) -> None:
        try:
            ids = await self.queue.requeue_expired()
        except QueueError as error:
            self._log("requeue_failed", error=str(error))
            return
        if ids:
            self._log("requeued_expired", jobs=ids)
        for job_id in ids:
            try:
                job = await self.queue.get(job_id)
            except QueueError as error:
                self._log("get_failed", job=job_id, error=str(error))
                continue
            if job is None or job.request.kind != "run":
                continue
            if job.state in (JobState.FAILED, JobState.CANCELLED):
                # Off the claim loop: GitHub's retries may wait.
                self._chore(self._report_given_up(job))

    def _chore(self, work: Awaitable[None]) -> None:
        """Run `work` in the background; shutdown waits for it within the grace period."""
        chore = asyncio.ensure_future(work)
        self._chores.add(chore)
        chore.add_done_callback(self._chores.discard)

    async def _report_given_up(self, job: Job) -> None:
        """Turn the progress comment of a job the queue ended into its report.

        Only a comment an attempt made is edited: none is created, so a job
        that never got that far leaves the thread as it was.
        """
        request = job.request
        if request.installation_id is None or request.thread.number == 0:
            return  # no thread: no comment to turn into the report
        try:
            publisher = await Publisher.for_installation(
                self.app,
                request.installation_id,
                request.thread.repository,
                request.thread.number,
                spacers=self._spacers,
                **self._publisher_options,
            )
            comment = await publisher.find_progress_comment(job.id)
            if comment is not None:
                await publisher.update_progress(comment, _given_up_report(job))
        except NeoError as error:
            self._log("report_failed", job=job.id, error=str(error))
        except Exception:
            log.exception("reporting job %s failed", job.id)
        else:
            self._log("given_up_reported", job=job.id, comment=comment)

    async def _guarded(self, running: _Running) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(running))
        try:
            await self.process(running)
        except _Stopped:
            pass
        except Exception:
            # A bug of ours: the log gets the traceback, the job a line (in process).
            log.exception("job %s crashed", running.job.id)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _heartbeat(self, running: _Running) -> None:
        while True:
            await self._sleep(self.heartbeat_every)
            try:
                beat = await self.queue.heartbeat(running.job.id, self.name, self.lease)
            except QueueError as error:
                self._log("heartbeat_failed", job=running.job.id, error=str(error))
                continue
            if beat.lease_lost:
                running.lease_lost = True
                running.stop.set()
                self._log("lease_lost", job=running.job.id)
                return
            if beat.cancel_requested and not running.cancel_requested:
                running.cancel_requested = True
                running.stop.set()
                self._log("cancel_requested", job=running.job.id)

    # --- one job ----------------------------------------------------------------------

    async def process(self, running: _Running) -> None:
        """Run one claimed job to its end and record the outcome in the queue."""
        job = running.job
        request = job.request
        progress = Progress(job.id, clock=self._clock)
        progress.start()
        if request.kind == "cancel":
            await self._stop_request(running)
            return
        threadless = request.thread.number == 0
        self._log("job_started", job=job.id, thread=request.thread.key, attempt=job.attempts)
        publisher: Publisher | None = None
        comment: int | None = None
        try:
            if request.installation_id is None:
                raise GitHubError("github: the delivery named no App installation")
            publisher = await Publisher.for_installation(
                self.app,
                request.installation_id,
                request.thread.repository,
                request.thread.number,
                spacers=self._spacers,
                **self._publisher_options,
            )
            # Reads only, and independent: together, so the comment comes sooner.
            default_branch, (config, config_error), level = await _together(
                publisher.default_branch(),
                self._config(publisher, request),
                self._permission(publisher, request),
            )
            # An invalid file still gets its answer: the defaults, under any overrides.
            fallback = RepoConfig.model_construct(**self._overrides)
            allowed = (config or fallback).allowed_users
            bots = (config or fallback).allowed_bots
            if not await self._authorised(request, level, allowed, bots):
                if not threadless:
                    await publisher.reply_once(
                        request.thread.number,
                        "unauthorised",
                        _unauthorised(request, allowed, self._allowed_users_source()),
                    )
                outcome = Outcome(conclusion=Conclusion.FAILED, error="unauthorised")
            elif config is None:
                assert config_error is not None
                if not threadless:
                    await publisher.reply_once(
                        request.thread.number, "config-error", render_config_comment(config_error)
                    )
                    self._chore(self._react(publisher, request))
                outcome = Outcome(conclusion=Conclusion.FAILED, error=str(config_error))
            else:
                if not threadless:
                    # The comment first: mutating calls are spaced a second apart,
                    # and the reaction can wait for its turn in the background.
                    comment = await publisher.progress_comment(
                        job.id, render_progress(progress.state, now=self._clock())
                    )
                    self._chore(self._react(publisher, request))
                outcome = await self._run(
                    running, publisher, config, default_branch, progress, comment
                )
        except _Stopped:
            raise
        except NeoError as error:
            outcome = Outcome(conclusion=Conclusion.FAILED, error=_error_line(error))
        except Exception as error:
            log.exception("job %s failed unexpectedly", job.id)
            outcome = Outcome(
                conclusion=Conclusion.FAILED,
                error=f"internal error ({type(error).__name__}); the service log has details",
            )
        self._check_alive(running)
        progress.finish(outcome.conclusion)
        report = render_report(progress.state, outcome)
        if publisher is not None and comment is not None:
            try:
                await publisher.update_progress(comment, report)
            except GitHubError as error:
                self._log("report_failed", job=job.id, error=str(error))
        await self._finish(
            running, _STATES[outcome.conclusion], self._result(running, outcome, report)
        )
        self._log("job_finished", job=job.id, conclusion=outcome.conclusion.value)

    async def _stop_request(self, running: _Running) -> None:
        """`@neo stop`: stop the thread's work if its author may start a run there.

        The same rule as for a run (`allowed_users`, allow-listed bots); an
        invalid config still has its defaults. Anyone else gets the one short
        reply, and the work goes on.
        """
        job = running.job
        request = job.request
        state = JobState.FAILED
        result: dict[str, Any] = {"conclusion": "failed", "error": "unauthorised"}
        try:
            if request.installation_id is None:
                raise GitHubError("github: the delivery named no App installation")
            publisher = await Publisher.for_installation(
                self.app,
                request.installation_id,
                request.thread.repository,
                request.thread.number,
                spacers=self._spacers,
                **self._publisher_options,
            )
            (config, _), level = await asyncio.gather(
                self._config(publisher, request), self._permission(publisher, request)
            )
            settings = config or RepoConfig.model_construct(**self._overrides)
            allowed = settings.allowed_users
            if await self._authorised(request, level, allowed, settings.allowed_bots):
                applied = await self.queue.apply_cancel(job.id)
                state = JobState.SUCCEEDED
                result = {"conclusion": "stopped", **applied.as_result()}
                self._log("stop_applied", job=job.id, **applied.as_result())
            else:
                self._log("stop_refused", job=job.id, author=request.author)
                if request.thread.number != 0:
                    await publisher.reply_once(
                        request.thread.number,
                        "unauthorised",
                        _unauthorised_stop(request, allowed, self._allowed_users_source()),
                    )
        except (NeoError, QueueError) as error:
            result = {"conclusion": "failed", "error": one_line(error, None)}
            self._log("stop_failed", job=job.id, error=result["error"])
        self._check_alive(running)
        await self._finish(running, state, result)

    def _result(self, running: _Running, outcome: Outcome, report: str) -> dict[str, Any]:
        """What the queue keeps of a finished job; `neo action` makes its outputs of it."""
        result: dict[str, Any] = {
            "conclusion": outcome.conclusion.value,
            "pr_url": outcome.pr_url,
            "error": outcome.error,
            "branch": running.branch,
            "session_id": running.session_id,
            "cost_usd": outcome.cost_usd,
            "report": report,
        }
        if outcome.cancelled_by:
            result["cancelled_by"] = outcome.cancelled_by
        return result

    async def _run(
        self,
        running: _Running,
        publisher: Publisher,
        config: RepoConfig,
        default_branch: str,
        progress: Progress,
        comment: int | None,
    ) -> Outcome:
        request = running.job.request
        thread: _Thread | None = None
        if request.thread.number != 0:
            thread = await self._read_thread(request, publisher)
        spec, pull_request_own_branch = await self._spec(
            running.job, config, default_branch, thread
        )
        running.branch = spec.work_branch
        self._log("spec_ready", job=running.job.id, branch=spec.work_branch)
        project_context = None
        if request.thread.is_pull_request:
            # The PR's own AGENTS.md could rewrite Neo's instructions: the default branch's.
            agents = await publisher.read_file("AGENTS.md", ref=default_branch)
            project_context = agents or ""

        changed = asyncio.Event()

        def on_event(event: Any) -> None:
            progress.apply(event)
            changed.set()

        done = asyncio.Event()
        live = None
        if comment is not None:
            live = asyncio.create_task(self._live(publisher, comment, progress, changed, done))
        options: dict[str, Any] = {}
        if self.mirrors is not None:
            options["cache"] = self.mirrors
        try:
            result = await self._run_job(
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
        running.session_id = result.session_id
        self._check_alive(running)
        conclusion = Conclusion.INCOMPLETE if result.incomplete else _CONCLUSIONS[result.conclusion]
        cancelled_by = None
        if conclusion is Conclusion.CANCELLED:
            cancelled_by = await self._cancelled_by(running.job)
        pr_url: str | None = None
        if result.changed:
            progress.note("opening the pull request")
            if pull_request_own_branch:
                assert thread is not None
                pr_url = thread.pr_url
            else:
                title = thread.title if thread is not None else _task_title(request.instruction)
                body = (
                    _pr_body(result, request, thread)
                    if thread is not None
                    else _threadless_pr_body(result, request)
                )
                pr = await publisher.open_or_update_pr(
                    head=spec.work_branch,
                    base=default_branch,
                    title=title,
                    body=body,
                    # Work a budget cut short is never ready for review.
                    draft=config.draft or result.incomplete,
                )
                pr_url = pr.url
        summary = result.summary
        if result.blocked_paths:
            summary += (
                "\n\nNot pushed: changes to "
                + ", ".join(f"`{path}`" for path in result.blocked_paths)
                + f" (workflow edits are off in `{self.config_path}`: `allow_workflow_edits`)."
            )
        error = None
        if result.error_kind is not None:
            error = f"{result.error_kind}: {result.error_message or 'no detail'}"
        return Outcome(
            conclusion=conclusion,
            summary=summary,
            pr_url=pr_url,
            error=error,
            cancelled_by=cancelled_by,
            left_out=result.left_out,
            generated=result.generated,
            usage=result.usage,
            cost_usd=result.cost_usd,
            duration_ms=result.duration_ms,
            num_turns=result.num_turns,
        )

    async def _live(
        self,
        publisher: Publisher,
        comment: int,
        progress: Progress,
        changed: asyncio.Event,
        done: asyncio.Event,
    ) -> None:
        """Edit the progress comment while the job runs: throttled, only when it changed."""
        throttle = Throttle(self.edit_every)
        now = self._clock()
        throttle.edited(render_progress(progress.state, now=now), now)
        while not done.is_set():
            now = self._clock()
            text = render_progress(progress.state, now=now)
            delay = throttle.delay(text, now)
            if delay == 0.0:
                try:
                    await publisher.update_progress(comment, text)
                except GitHubError as error:  # the report still gets written at the end
                    self._log("progress_edit_failed", error=str(error))
                throttle.edited(text, now)
                delay = self.edit_every
            changed.clear()
            wait = self.edit_every if delay is None else max(delay, 0.05)
            await _first(done.wait(), asyncio.sleep(wait))

    # --- before the run ---------------------------------------------------------------

    async def _config(
        self, publisher: Publisher, request: JobRequest
    ) -> tuple[RepoConfig | None, RepoConfigError | None]:
        """The repository's config; without one, the owner's; without either, defaults.

        From the default branch (no ref: GitHub's default), so a pull request
        cannot change it. The repository's file wins whole: the two are never
        merged.
        """
        text = await publisher.read_file(self.config_path)
        source = self.config_path
        if text is None:
            owner = await self._owner_config(request)
            if owner is None:
                return self._overridden(RepoConfig(), source), None
            text, source = owner
        try:
            config = parse_repo_config(text, source=source)
        except RepoConfigError as error:
            return None, error
        return self._overridden(config, source), None

    def _overridden(self, config: RepoConfig, source: str) -> RepoConfig:
        """`config` with the overrides applied, checked together (a prefix meets schedules)."""
        if not self._overrides:
            return config
        try:
            return RepoConfig.model_validate({**dict(config), **self._overrides})
        except ValidationError as error:
            field, message = _first_problem(error)
            raise ConfigError(
                f"{field}: {message}, with {self.overrides_source} applied to {source}"
            ) from None

    def _allowed_users_source(self) -> str:
        """Where the `allowed_users` a job was checked against is set, for the reply."""
        if "allowed_users" in self._overrides:
            return self.overrides_source
        return f"`{self.config_path}`"

    async def _owner_config(self, request: JobRequest) -> tuple[str, str] | None:
        """`config_path` on the default branch of the owner's `.github` repository, and
        how to name it; None when there is none or the App cannot read it.

        The job's token is scoped to its own repository, so this reads with a
        read-only token for `{owner}/.github`, which GitHub grants only when the
        App is installed there. A refusal is remembered for `OWNER_CONFIG_TTL`.
        """
        assert request.installation_id is not None
        owner, _, name = request.thread.repository.partition("/")
        if name.lower() == _OWNER_CONFIG_REPO:
            return None
        key = (request.installation_id, owner.lower())
        until = self._unreadable.get(key)
        if until is not None and self._clock() < until:
            return None
        repository = f"{owner}/{_OWNER_CONFIG_REPO}"
        try:
            client = await self.app.installation_client(
                request.installation_id, repository, CONFIG_PERMISSIONS
            )
            reader = Publisher(
                client,
                repository,
                0,
                bot_login=await self.app.bot_login(),
                **self._publisher_options,
            )
            text = await reader.read_file(self.config_path)
        except (GitHubAuthError, GitHubError) as error:
            if error.status in _NOT_THERE:
                self._unreadable[key] = self._clock() + OWNER_CONFIG_TTL
                return None
            raise
        self._unreadable.pop(key, None)
        if text is None:
            return None
        return text, f"{repository}:{self.config_path}"

    async def _permission(self, publisher: Publisher, request: JobRequest) -> str | None:
        """The author's role on the repository, when a role decides (a user's request)."""
        if await self._unchecked(request) or request.author.lower().endswith("[bot]"):
            return None
        return await publisher.permission(request.author)

    async def _unchecked(self, request: JobRequest) -> bool:
        """A thread-less job by Neo itself or nobody: the repository's own files asked."""
        if request.thread.number != 0:
            return False
        return not request.author or request.author.lower() == (await self.app.bot_login()).lower()

    async def _authorised(
        self,
        request: JobRequest,
        level: str | None,
        allowed: Sequence[str],
        bots: Sequence[str],
    ) -> bool:
        if await self._unchecked(request):
            return True
        author = request.author
        if author.lower().endswith("[bot]"):
            listed = {bot.lower() for bot in (*bots, *self.settings.allowed_bots)}
            return author.lower() in listed and author != await self.app.bot_login()
        return level in allowed

    async def _react(self, publisher: Publisher, request: JobRequest) -> None:
        kind = trigger_kind(request.event)
        target = request.thread.number if kind == "issue" else request.trigger_id
        try:
            await publisher.react(kind, target)
        except NeoError as error:  # an acknowledgement, not the work
            self._log("react_failed", error=str(error))
        except Exception:
            log.exception("reacting to the trigger of %s failed", request.thread.key)

    async def _read_thread(self, request: JobRequest, publisher: Publisher) -> _Thread:
        assert request.installation_id is not None
        repository = request.thread.repository
        owner, _, name = repository.partition("/")
        number = request.thread.number
        client = await self.app.installation_client(request.installation_id, repository)
        path = f"/repos/{repository}/issues/{number}"
        try:
            issue = (await client.rest.issues.async_get(owner, name, number)).parsed_data
            path += "/comments"
            listed = await client.rest.issues.async_list_comments(owner, name, number, per_page=100)
            raw_comments = cast("list[Any]", listed.parsed_data)
            pull = None
            if request.thread.is_pull_request:
                path = f"/repos/{repository}/pulls/{number}"
                pull = (await client.rest.pulls.async_get(owner, name, number)).parsed_data
        except Exception as error:
            raise GitHubError(f"github: GET {path}: {_describe(error)}") from None
        opening = Post(
            author=issue.user.login if issue.user else "ghost",
            association=str(issue.author_association),
            body=issue.body if isinstance(issue.body, str) else "",
            created_at=str(issue.created_at),
        )
        comments: list[Post] = []
        requester_id: int | None = None
        for item in raw_comments:
            login = item.user.login if item.user else "ghost"
            if item.id == request.trigger_id and item.user:
                requester_id = int(item.user.id)
            comments.append(
                Post(
                    author=login,
                    association=str(item.author_association),
                    body=item.body if isinstance(item.body, str) else "",
                    created_at=str(item.created_at),
                    is_bot=bool(item.user and item.user.type == "Bot"),
                    id=int(item.id),
                )
            )
        thread = _Thread(issue.title, opening, tuple(comments), requester_id)
        from_workflow = request.instruction_from_workflow
        if from_workflow and request.event.startswith("issue_comment."):
            thread.trigger_post = next((c for c in comments if c.id == request.trigger_id), None)
        if pull is not None:
            head_repo = pull.head.repo.full_name if pull.head.repo else None
            thread.head_ref = pull.head.ref
            thread.same_repository = (head_repo or "").lower() == repository.lower()
            thread.pr_url = pull.html_url
            try:
                thread.diff = await publisher.pull_request_diff()
            except GitHubError as error:
                # Context, not the work: the model can still read the branch with git.
                thread.diff_missing = f"GitHub did not give it ({error})"
        if request.event.startswith(_REVIEW_COMMENT):
            comment = await publisher.review_comment(request.trigger_id)
            thread.review = _location(comment)
            if comment.user is not None:
                thread.requester_id = int(comment.user.id)
            if from_workflow:
                thread.trigger_post = Post(
                    author=comment.user.login if comment.user else "ghost",
                    association=str(comment.author_association),
                    body=comment.body,
                    created_at=str(comment.created_at),
                    id=int(comment.id),
                )
        elif request.event.startswith(_REVIEW) and request.thread.is_pull_request:
            if from_workflow:
                thread.trigger_post = await self._review_post(client, request)
            thread.inline = tuple(
                InlineComment(
                    post=Post(
                        author=c.user.login if c.user else "ghost",
                        association=str(c.author_association),
                        body=c.body,
                        created_at=str(c.created_at),
                        id=int(c.id),
                    ),
                    location=_location(c),
                )
                for c in await publisher.review_comments(request.trigger_id)
            )
        return thread

    async def _review_post(self, client: GitHub[Any], request: JobRequest) -> Post | None:
        """The review that started a workflow's run, or None when GitHub does not give it.

        Context only (the workflow's prompt is the task), so a failure is logged, not fatal.
        """
        owner, _, name = request.thread.repository.partition("/")
        try:
            response = await client.rest.pulls.async_get_review(
                owner, name, request.thread.number, request.trigger_id
            )
        except Exception as error:
            self._log("review_read_failed", review=request.trigger_id, error=_describe(error))
            return None
        review = response.parsed_data
        return Post(
            author=review.user.login if review.user else "ghost",
            association=str(review.author_association),
            body=review.body or "",
            created_at=str(review.submitted_at or ""),
            id=int(review.id),
        )

    async def _spec(
        self, job: Job, config: RepoConfig, default_branch: str, thread: _Thread | None
    ) -> tuple[JobSpec, bool]:
        """The runner's spec; and whether the job works on a pull request's own branch.

        `thread` is None for a job without one.
        """
        request = job.request
        assert request.installation_id is not None
        repository = request.thread.repository
        number = request.thread.number
        bot = await self.app.bot_login()
        own_branch = False
        pull_request: int | None = None
        co_author: tuple[str, str] | None = None
        if thread is None:
            work_branch = _threadless_branch(request, default_branch)
            prompt = build_instruction_prompt(
                repository,
                instruction=request.instruction,
                event=request.event,
                branch=work_branch,
                requester=None if await self._unchecked(request) else request.author,
                from_workflow=request.instruction_from_workflow,
            )
            if request.author and request.author.lower() != bot.lower():
                co_author = (request.author, noreply_email(request.author))
            session_key = None  # each run of a schedule starts afresh
            commit_message = f"Neo: {_task_title(request.instruction)}"
        else:
            if request.thread.is_pull_request and thread.head_ref and thread.same_repository:
                work_branch, own_branch = thread.head_ref, True
            elif request.thread.is_pull_request:
                # A fork's branch cannot be pushed to: a branch of ours, from its head.
                work_branch, pull_request = f"{config.branch_prefix}pr-{number}", number
            else:
                work_branch = f"{config.branch_prefix}issue-{number}"
            post = None
            workflow_prompt = None
            if request.instruction_from_workflow:
                # The workflow's prompt is the task; what started the run is context.
                post, workflow_prompt = thread.trigger_post, request.instruction
            elif request.event.startswith(_COMMENT_EVENTS):
                post = Post(
                    author=request.author,
                    association=request.author_association,
                    body=request.instruction,
                    id=request.trigger_id,
                )
            prompt = build_task_prompt(
                request.thread,
                title=thread.title,
                opening=thread.opening,
                trigger=Trigger(
                    requester=request.author,
                    event=request.event,
                    post=post,
                    review=thread.review,
                    inline=thread.inline,
                    workflow_prompt=workflow_prompt,
                ),
                comments=thread.comments,
                diff=thread.diff,
                diff_missing=thread.diff_missing,
                neo_login=bot,
            )
            co_author = (request.author, noreply_email(request.author, thread.requester_id))
            session_key = request.thread.key
            commit_message = _commit_message(thread.title, number)
        # Pushing under .github/workflows/ takes the `workflows` permission.
        permissions = WORKFLOW_JOB_PERMISSIONS if config.allow_workflow_edits else None
        token = await self.app.installation_token(request.installation_id, repository, permissions)
        docker = self.settings.sandbox == "docker"
        spec = JobSpec(
            job_id=f"job-{job.id}",
            repo_url=f"{self.settings.git_url}/{repository}.git",
            token=token.token,
            base_branch=default_branch,
            work_branch=work_branch,
            prompt=prompt,
            data_dir=self.settings.data_dir,
            pull_request=pull_request,
            provider=config.provider,
            model=config.model,
            max_turns=config.max_turns,
            time_limit=config.time_limit * 60.0,
            max_cost_usd=config.max_cost_usd,
            effort=config.effort if config.thinking else None,
            sandbox=self.settings.sandbox,
            image=(config.sandbox_image or self.settings.sandbox_image) if docker else None,
            setup=config.setup,
            setup_network=config.setup_network,
            allow_workflow_edits=config.allow_workflow_edits,
            co_author=co_author,
            bot_name=bot,
            bot_email=noreply_email(bot),
            session_key=session_key,
            commit_message=commit_message,
        )
        return spec, own_branch

    # --- the end ----------------------------------------------------------------------

    async def _cancelled_by(self, job: Job) -> str | None:
        """The author of the cancel request that stopped `job`, when the queue shows one."""
        try:
            # Any state: the request that stopped it may not have finished yet.
            jobs = await self.queue.list(repository=job.request.thread.repository, limit=100)
        except QueueError:
            return None
        for other in jobs:
            result = other.result or {}
            if other.request.kind == "cancel" and job.id in result.get("cancel_requested", ()):
                return other.request.author
        return None

    def _check_alive(self, running: _Running) -> None:
        if running.lease_lost:
            self._log("abandoned", job=running.job.id, reason="lease lost")
            raise _Stopped
        if running.shutting_down:
            raise _Stopped

    async def _finish(self, running: _Running, state: JobState, result: dict[str, Any]) -> None:
        try:
            await self.queue.finish(running.job.id, self.name, state, result)
        except LeaseLost:
            self._log("finish_lost", job=running.job.id)

    def _log(self, event: str, **fields: Any) -> None:
        line = {"event": event, "ts": round(time.time(), 3), "worker": self.name, **fields}
        log.info(json.dumps(line, default=str))


# --- pure helpers ---------------------------------------------------------------------


async def _together(
    first: Awaitable[_A], second: Awaitable[_B], third: Awaitable[_C]
) -> tuple[_A, _B, _C]:
    """Await the three at once; the first failure is raised once all have ended."""
    results = await asyncio.gather(first, second, third, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast("tuple[_A, _B, _C]", tuple(results))


async def _first(*waits: Awaitable[Any]) -> None:
    """Wait until the first of `waits` is done; cancel the others."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _unauthorised(request: JobRequest, allowed: Sequence[str], source: str) -> str:
    roles = ", ".join(allowed)
    return (
        f"Sorry @{request.author}, Neo only works for people with {roles} access to this "
        f"repository (set by `allowed_users` in {source}). Nothing was run."
    )


def _unauthorised_stop(request: JobRequest, allowed: Sequence[str], source: str) -> str:
    roles = ", ".join(allowed)
    return (
        f"Sorry @{request.author}, only people with {roles} access to this repository can"
        f" stop Neo's work (set by `allowed_users` in {source}). The work goes on."
    )


def _valid_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides as `RepoConfig` reads them; ConfigError names the first bad one."""
    try:
        valid = RepoConfig.model_validate(dict(overrides))
    except ValidationError as error:
        field, message = _first_problem(error)
        raise ConfigError(f"config override {field}: {message}") from None
    return {name: getattr(valid, name) for name in overrides}


def _first_problem(error: ValidationError) -> tuple[str, str]:
    """The field and message of a validation error's first problem, each on one line."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "?"
    message = one_line(str(first["msg"]).removeprefix("Value error, "), None)
    return field, message


def _location(comment: Any) -> ReviewLocation:
    """Where a review comment (either of githubkit's two shapes) points."""

    def number(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    side = comment.side if isinstance(comment.side, str) else None
    return ReviewLocation(
        path=comment.path,
        # An outdated comment has no line in the current diff, only its original one.
        line=number(comment.line) or number(comment.original_line),
        start_line=number(comment.start_line) or number(comment.original_start_line),
        side=side,
        diff_hunk=comment.diff_hunk,
    )


def _given_up_report(job: Job) -> str:
    """The report of a job the queue ended because its worker stopped answering."""
    reason = one_line(str((job.result or {}).get("error") or ""), None)
    reason = reason or "its worker stopped answering"
    heading = "🛑 **Cancelled**" if job.state is JobState.CANCELLED else "❌ **Failed**"
    return "\n\n".join(
        [
            job_marker(job.id),
            heading,
            f"**Error:** {reason[0].upper()}{reason[1:].rstrip('.')}. Nothing more will be"
            " pushed for this request; mention Neo again to retry.",
        ]
    )


def _error_line(error: NeoError) -> str:
    line = one_line(error, None)
    return f"{error.kind}: {line}"


def _describe(error: Exception) -> str:
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return f"{status} {type(error).__name__}" if status else type(error).__name__


def _threadless_branch(request: JobRequest, default_branch: str) -> str:
    """The branch a job without a thread works on: the one it names, never the default."""
    branch = (request.branch or "").strip()
    if not branch:
        raise ConfigError(
            "a job on no issue or pull request must name the branch to work on; none was given"
        )
    if branch == default_branch:
        raise ConfigError(
            f"the job's branch {branch!r} is the default branch; Neo works on a branch of its"
            " own and opens a pull request from it"
        )
    return branch


def _task_title(instruction: str) -> str:
    """A title for the work of a job without a thread: its instruction's first line."""
    line = next((line for line in instruction.splitlines() if line.strip()), "")
    line = " ".join(line.split())
    return line if len(line) <= 72 else line[:71].rstrip() + "…"


def _commit_message(title: str, number: int) -> str:
    subject = " ".join(title.split())[:60] or f"issue #{number}"
    return f"Neo: {subject} (#{number})"


def _diffstat(stat: DiffStat) -> str:
    lines = [f"{f.path} | +{f.insertions} -{f.deletions}" for f in stat.files[:50]]
    if len(stat.files) > 50:
        lines.append(f"... {len(stat.files) - 50} more files")
    lines.append(
        f"{stat.files_changed} file{'s' if stat.files_changed != 1 else ''} changed, "
        f"+{stat.insertions} -{stat.deletions}"
    )
    return "```\n" + "\n".join(lines) + "\n```"


def _pr_body(result: JobResult, request: JobRequest, thread: _Thread) -> str:
    number = request.thread.number
    asked = f"at the request of @{request.author} in #{number}"
    if request.instruction_from_workflow:
        asked = f"in a workflow run on #{number}, started by @{request.author}"
    parts = [f"Neo made this change {asked}.", *_what_was_done(result)]
    if request.thread.is_pull_request:
        parts.append(f"Based on #{number}.")
    else:
        parts.append(f"Fixes #{number}")
    return "\n\n".join(parts)


def _threadless_pr_body(result: JobResult, request: JobRequest) -> str:
    """The body of a job's pull request when no issue asked: what it was told, and did.

    Each run of the same schedule rewrites it: it tells the latest run.
    """
    if request.event == "schedule" and not request.instruction_from_workflow:
        why = "on a schedule in `.github/neo.yml`; each run updates this pull request"
    elif request.event == "schedule":
        why = "on a workflow's schedule; each run updates this pull request"
    else:
        why = f"from a workflow run (`{_one_word(request.event)}`)"
    if request.author and not request.author.lower().endswith("[bot]"):
        why += f", at the request of @{request.author}"
    task = "\n".join(f"> {line}" for line in neutralise(request.instruction.strip()).splitlines())
    parts = [f"Neo made this change {why}.", "## Task", task or "> _none_"]
    return "\n\n".join([*parts, *_what_was_done(result)])


def _what_was_done(result: JobResult) -> list[str]:
    """A pull request body's summary, changed files and anything left out."""
    parts = ["## Summary", neutralise(result.summary.strip()) or "_The agent gave no summary._"]
    if result.incomplete:
        why = " ".join(f"{result.error_kind}: {result.error_message or ''}".split())
        parts[:0] = [
            f"> [!WARNING]\n> **Incomplete.** Neo stopped before it finished (`{neutralise(why)}`);"
            " this is the work so far, and the summary says what is left."
        ]
    if result.diffstat is not None:
        parts += ["## Changes", _diffstat(result.diffstat)]
    if result.blocked_paths:
        parts.append("Changes to .github/workflows/ were left out: `allow_workflow_edits` is off.")
    return parts


def _one_word(text: str) -> str:
    return "".join(c for c in text if c.isalnum() or c in "._-")[:60] or "unknown"
