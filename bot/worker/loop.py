"""The worker: claims jobs from the queue, holds their leases, and drains on shutdown.

    worker = Worker(WorkerDeps(queue=queue, app=app, settings=settings),
                    WorkerOptions(name="host-1:0", concurrency=2))
    await worker.run(stop)  # until `stop` is set, then drains

Leases, stops and shutdown: docs/architecture.md, "The worker".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.github.app import AppAuth
from bot.github.client import DEFAULT_SPACERS, RepoClient, Spacers
from bot.jobs import Job, JobKind, JobState, Lane
from bot.queue import JobQueue, QueueError
from bot.runs.writer import EventWriter
from bot.worker.access import Access
from bot.worker.budgets import OperatorBudgets
from bot.worker.ci_repair import ci_repair_job
from bot.worker.config import ConfigResolver, ConfigSource
from bot.worker.reported import reported_outcome
from bot.worker.running import Running, Stopped, first, log_event
from bot.worker.services import JobServices, RunJob
from bot.worker.settle import Backoff, Settler
from bot.worker.spec import WorkerSettings
from bot.worker.steer import steer_job
from bot.worker.stop import stop_job
from bot.worker.sweep import SweepGate
from bot.worker.task import task_job
from bot.worker.texts import given_up_report
from runner import job as runner_job
from runner.errors import NeoError
from runner.git import MirrorCache

__all__ = ["Worker", "WorkerDeps", "WorkerOptions"]

log = logging.getLogger("neo.worker")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerDeps:
    """What a worker works with: the queue, GitHub, the runner, and the clock."""

    queue: JobQueue
    app: AppAuth
    settings: WorkerSettings
    run_job: RunJob = runner_job.run
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    spacers: Spacers = DEFAULT_SPACERS
    # Passed to each `RepoClient` (its retry policy, in tests).
    client_options: Mapping[str, Any] = field(default_factory=dict)
    # Set by whoever queues a job in this process (`neo serve`'s intake): claim at once.
    wakeup: asyncio.Event | None = None
    # The process's mirror cache, kept across jobs so each clone finds a spare tree.
    mirrors: MirrorCache | None = None
    # The service's daily spending defaults and ceilings (NEO_BUDGET_*).
    budgets: OperatorBudgets = field(default_factory=OperatorBudgets)
    # The time of day, for the budgets' UTC days.
    wall_clock: Callable[[], float] = time.time


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """How a worker runs: its name, how many jobs at once, and its pace (seconds)."""

    name: str
    concurrency: int = 1
    lease: float = 60.0
    # A heartbeat may be late or lost a few times before the lease runs out.
    heartbeat_every: float | None = None  # lease / 4
    requeue_every: float | None = None  # lease / 2
    poll_every: float = 1.0
    edit_every: float = 3.0
    grace: float = 30.0
    # NEO_JOB_TIMEOUT: a job still running this long after it started is
    # stopped and fails. None: no limit but the run's own.
    job_timeout: float | None = None
    # How long a finished job's outcome waits for a queue that does not
    # answer, written again with backoff; then the report on GitHub keeps it.
    settle_for: float = 3600.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")

    @property
    def heartbeat(self) -> float:
        return self.lease / 4 if self.heartbeat_every is None else self.heartbeat_every

    @property
    def requeue(self) -> float:
        return self.lease / 2 if self.requeue_every is None else self.requeue_every


class Worker:
    """Runs up to `options.concurrency` jobs of `deps.queue` at once.

    `config` names the settings file read from the default branch (of the
    repository, failing that of the owner's `.github`) and the overrides that
    win over it.
    """

    def __init__(
        self, deps: WorkerDeps, options: WorkerOptions, config: ConfigSource | None = None
    ) -> None:
        self.deps = deps
        self.options = options
        self.queue = deps.queue
        self.name = options.name
        self._running: dict[int, tuple[Running, asyncio.Task[None]]] = {}
        # Reports of jobs the queue gave up on, and reactions, written in the background.
        self._chores: set[asyncio.Task[None]] = set()
        self._sweeps = SweepGate(deps.clock, options.lease)
        self.settler = Settler(
            deps.queue,
            options.name,
            clock=deps.clock,
            sleep=deps.sleep,
            backoff=Backoff(most=options.heartbeat, give_up_after=options.settle_for),
        )
        self.services = JobServices(
            name=options.name,
            queue=deps.queue,
            app=deps.app,
            settings=deps.settings,
            config=ConfigResolver(
                deps.app,
                config or ConfigSource(),
                deps.clock,
                client_options=deps.client_options,
                operator=deps.settings.mcp_operator,
            ),
            access=Access(deps.settings.allowed_bots),
            clock=deps.clock,
            chore=self._chore,
            settler=self.settler,
            edit_every=options.edit_every,
            spacers=deps.spacers,
            run_job=deps.run_job,
            client_options=deps.client_options,
            mirrors=deps.mirrors,
            budgets=deps.budgets,
            wall_clock=deps.wall_clock,
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Take and run jobs until `stop` is set; then drain within the grace period."""
        clock = self.deps.clock
        await self._requeue_expired()
        last_requeue = clock()
        wake = asyncio.Event()
        wakeup = self.deps.wakeup
        waits: list[Callable[[], Awaitable[Any]]] = [stop.wait, wake.wait]
        if wakeup is not None:
            waits.append(wakeup.wait)
        while not stop.is_set():
            if clock() - last_requeue >= self.options.requeue:
                await self._requeue_expired()
                last_requeue = clock()
            # Cleared before claiming: a job queued from here on sets it again.
            wake.clear()
            if wakeup is not None:
                wakeup.clear()
            while not stop.is_set():
                # With every run slot taken, stop requests are still taken:
                # they are quick, and the runs they stop are what fills the slots.
                full = self._runs() >= self.options.concurrency
                only: Lane | None = "cancel" if full else None
                try:
                    job = await self.queue.claim(self.name, self.options.lease, only=only)
                except QueueError as error:
                    self._queue_away()
                    self._log("claim_failed", error=str(error))
                    job = None
                else:
                    self._sweeps.answered()
                if job is None:
                    break
                self._start(job, wake)
            await first(*(wait() for wait in waits), self.deps.sleep(self.options.poll_every))
        await self._drain()

    def _runs(self) -> int:
        """Run jobs going on here (stop requests take no slot)."""
        return sum(1 for running, _ in self._running.values() if running.job.request.lane == "run")

    def _start(self, job: Job, wake: asyncio.Event) -> None:
        running = Running(job)
        task = asyncio.create_task(self._guarded(running), name=f"neo-job-{job.id}")
        self._running[job.id] = (running, task)

        def done(_: asyncio.Task[None]) -> None:
            # Only its own entry: the job may have been claimed again here
            # (its lease swept while this attempt waited for the queue).
            if self._running.get(job.id, (None, None))[1] is task:
                del self._running[job.id]
            wake.set()

        task.add_done_callback(done)

    async def _drain(self) -> None:
        """Let running jobs finish within `grace`; stop and release the rest."""
        grace = self.options.grace
        if self._chores:
            await asyncio.wait(list(self._chores), timeout=grace)
            for chore in list(self._chores):
                chore.cancel()
        if not self._running:
            return
        tasks = [task for _, task in self._running.values()]
        await asyncio.wait(tasks, timeout=grace)
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
            if self.settler.published(running.job.id):
                # Its work is on GitHub: released, it would run again as a
                # first attempt. Its lease runs out, and the attempt that
                # claims it then finds the report.
                self._log("not_released", job=running.job.id, reason="published")
                continue
            with contextlib.suppress(QueueError):
                await self.queue.release(running.job.id, self.name)
            self._log("released", job=running.job.id)

    async def _requeue_expired(self) -> None:
        if not self._may_sweep():
            return
        try:
            ids = await self.queue.requeue_expired()
        except QueueError as error:
            self._queue_away()
            self._log("requeue_failed", error=str(error))
            return
        self._sweeps.answered()
        if ids:
            self._log("requeued_expired", jobs=ids)
        for job_id in ids:
            try:
                job = await self.queue.get(job_id)
            except QueueError as error:
                self._log("get_failed", job=job_id, error=str(error))
                continue
            if job is None or job.request.lane == "cancel":  # a stop's or a steer's
                continue
            if job.state in (JobState.FAILED, JobState.CANCELLED):
                # Off the claim loop: GitHub's retries may wait.
                self._chore(self._report_given_up(job))

    def _may_sweep(self) -> bool:
        """Not while the queue was away, nor for a lease after it came back
        (`SweepGate`), nor before each job running here has renewed its lease
        since (a heartbeat held up past that lease on a loaded host would
        otherwise find its own job swept); nor while an outcome here waits for
        the queue: its job's lease is one that ran out, and the outcome goes first."""
        if self.settler.waiting or not self._sweeps.open():
            return False
        return all(running.renewed for running, _ in self._running.values())

    def _queue_away(self) -> None:
        """The queue failed to answer: no sweep until it answered for a lease and
        every job running here renewed its lease."""
        self._sweeps.unanswered()
        for running, _ in self._running.values():
            running.renewed = False

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
            github: RepoClient = await self.services.repo_client(request)
            found = await github.job_comment(job.id)
            comment = None if found is None else found[0]
            if found is not None and reported_outcome(found[1], job) is not None:
                # An attempt finished and reported before its outcome reached
                # the queue: the report stands.
                self._log("given_up_reported", job=job.id, comment=comment, kept=True)
                return
            if comment is not None:
                await github.update_progress(comment, given_up_report(job))
        except NeoError as error:
            self._log("report_failed", job=job.id, error=str(error))
        except Exception:
            log.exception("reporting job %s failed", job.id)
        else:
            self._log("given_up_reported", job=job.id, comment=comment)

    async def _guarded(self, running: Running) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(running))
        deadline = None
        if self.options.job_timeout is not None:
            deadline = asyncio.create_task(self._deadline(running, self.options.job_timeout))
        try:
            async with self._event_log(running):
                await self._process(running)
        except Stopped:
            pass
        except Exception:
            # A bug of ours: the log gets the traceback, the job a line (in process).
            log.exception("job %s crashed", running.job.id)
        finally:
            for chore in (heartbeat, deadline):
                if chore is not None:
                    chore.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await chore

    @contextlib.asynccontextmanager
    async def _event_log(self, running: Running) -> AsyncIterator[None]:
        """A run's event log, written while it runs: its states, and the runner's events."""
        job = running.job
        if job.request.lane != "run":
            yield
            return
        services = self.services
        async with EventWriter(
            services.queue, job.id, clock=services.wall_clock, report=self._log
        ) as events:
            running.events = events
            if job.attempts == 1:
                events.state("queued", at=job.created_at)
            events.state("running")
            try:
                yield
            finally:
                running.events = None
                if not events.ended and running.shutting_down and not running.lease_lost:
                    events.state("queued")  # handed back: another worker takes it

    async def _process(self, running: Running) -> None:
        """Run one claimed job to its end, by its kind, and record the outcome in the queue."""
        kind = running.job.request.kind
        if kind is JobKind.STOP:
            await stop_job(self.services, running)
        elif kind is JobKind.STEER:
            await steer_job(self.services, running)
        elif kind is JobKind.CI_REPAIR:
            await ci_repair_job(self.services, running)
        else:  # a task, or a review
            await task_job(self.services, running)

    async def _deadline(self, running: Running, seconds: float) -> None:
        """Stop the job once it has run `seconds`: a hung run would hold its thread.

        The heartbeat goes on meanwhile, and the queue extends the lease
        `WIND_DOWN` past this, so the stopped job still reports.
        """
        await self.deps.sleep(seconds)
        running.timed_out = seconds
        running.stop.set()
        self._log("job_timeout", job=running.job.id, seconds=seconds)

    async def _heartbeat(self, running: Running) -> None:
        while True:
            await self.deps.sleep(self.options.heartbeat)
            try:
                beat = await self.queue.heartbeat(running.job.id, self.name, self.options.lease)
            except QueueError as error:
                self._queue_away()
                self._log("heartbeat_failed", job=running.job.id, error=str(error))
                continue
            self._sweeps.answered()
            running.renewed = True
            if beat.lease_lost:
                running.lease_lost = True
                running.stop.set()
                self._log("lease_lost", job=running.job.id)
                return
            if beat.cancel_requested and not running.cancel_requested:
                running.cancel_requested = True
                running.stop.set()
                self._log("cancel_requested", job=running.job.id)

    def _log(self, event: str, **fields: Any) -> None:
        log_event(self.name, event, **fields)
