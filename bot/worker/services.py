"""What every kind of job works with, built once per worker: `JobServices`.

The queue, GitHub, the config and access rules, the runner, the clocks and
the pace. The job kinds (`task`, `ci_repair`, `stop`) and the services they
share (`live`, `refusals`, `runs`, `reporting`) take it as their first
argument.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.github.app import AppAuth
from bot.github.client import DEFAULT_SPACERS, GitHubError, RepoClient, Spacers
from bot.jobs import JobOutcome, JobRequest
from bot.queue import JobQueue, SpendRecord
from bot.worker.access import Access
from bot.worker.budgets import OperatorBudgets
from bot.worker.config import ConfigResolver
from bot.worker.running import Running, log_event
from bot.worker.settle import Settler
from bot.worker.spec import WorkerSettings
from runner import job as runner_job
from runner.git import MirrorCache
from runner.job import JobResult

__all__ = ["JobServices", "RunJob"]

RunJob = Callable[..., Awaitable[JobResult]]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobServices:
    """What the jobs of the worker `name` work with; the worker holds their leases."""

    name: str
    queue: JobQueue
    app: AppAuth
    settings: WorkerSettings
    config: ConfigResolver
    access: Access
    clock: Callable[[], float]
    # Runs an effort in the background (a reaction); shutdown waits for it.
    chore: Callable[[Awaitable[None]], None]
    # Writes finished jobs' outcomes and spend, however long the queue is away.
    settler: Settler
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

    async def finish(
        self, running: Running, outcome: JobOutcome, spend: Sequence[SpendRecord] = ()
    ) -> None:
        """Record what the job spent and its outcome in the queue, waiting for the queue
        to answer (the outcome not, when its lease was lost)."""
        if running.events is not None:
            running.events.state(
                "finished", conclusion=outcome.conclusion.value, error=outcome.error
            )
        await self.settler.settle(running, outcome, spend)

    def check_alive(self, running: Running) -> None:
        running.check_alive(self.name)

    def log(self, event: str, **fields: Any) -> None:
        log_event(self.name, event, **fields)
