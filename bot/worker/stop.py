"""The stop job, `@neo stop`: stop the thread's work if its author may start a run there.

The same rule as for a run (`allowed_users`, allow-listed bots); an invalid
config still has its defaults. Anyone else gets the one short reply, and the
work goes on. The queue's `apply_cancel` does the stopping.
"""

from __future__ import annotations

import asyncio

from bot.jobs import Conclusion, JobOutcome
from bot.queue import QueueError
from bot.worker.access import unauthorised_stop
from bot.worker.refusals import may_ask
from bot.worker.running import Running
from bot.worker.services import JobServices
from runner.errors import NeoError
from runner.text import one_line

__all__ = ["stop_job"]


async def stop_job(services: JobServices, running: Running) -> None:
    job = running.job
    request = job.request
    outcome = JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised")
    try:
        github = await services.repo_client(request)
        (config, _), level = await asyncio.gather(
            services.config.resolve(github, request), services.access.permission(github, request)
        )
        if may_ask(services, github, request, level, config):
            applied = await services.queue.apply_cancel(job.id)
            outcome = JobOutcome(
                conclusion=Conclusion.STOPPED,
                cancelled=applied.cancelled,
                cancel_requested=applied.cancel_requested,
            )
            services.log("stop_applied", job=job.id, **applied.as_result())
            await _log_stops(services, applied.cancelled + applied.cancel_requested, request.author)
        else:
            services.log("stop_refused", job=job.id, author=request.author)
            if request.thread.number != 0:
                allowed = (config or services.config.source.fallback()).allowed_users
                where = services.config.source.allowed_users_source()
                await github.reply_once(
                    request.thread.number,
                    "unauthorised",
                    unauthorised_stop(request, allowed, where),
                )
    except (NeoError, QueueError) as error:
        outcome = JobOutcome(conclusion=Conclusion.FAILED, error=one_line(error, None))
        services.log("stop_failed", job=job.id, error=outcome.error)
    services.check_alive(running)
    await services.finish(running, outcome)


async def _log_stops(services: JobServices, runs: tuple[int, ...], by: str) -> None:
    """A `stop` record naming who in each stopped run's log (the run page shows it)."""
    at = services.wall_clock()
    for run in runs:
        try:
            await services.queue.append_events(run, [(at, "stop", {"by": by})])
        except QueueError as error:  # the log is for watchers: the stop stands
            services.log("stop_record_failed", job=run, error=str(error))
