"""How every job ends: the progress comment turned into the report, the outcome stored.

A failure at any step is one line: Neo's kind of error, or "internal error"
for a bug of ours, whose traceback goes to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from bot.github.client import GitHubError
from bot.jobs import Conclusion, Job
from bot.queue import overran
from bot.worker.context import Ended, ProgressComment, with_lead
from bot.worker.progress import Outcome, Progress
from bot.worker.rendering import render_report
from bot.worker.reported import with_outcome
from bot.worker.running import Running
from bot.worker.services import JobServices
from bot.worker.texts import error_line, stored_outcome
from runner.errors import NeoError

__all__ = ["failed_outcome", "report"]

log = logging.getLogger("neo.worker")


async def report(
    services: JobServices,
    running: Running,
    progress: Progress,
    ended: Ended,
    comment: ProgressComment | None,
    *,
    then: Callable[[Outcome], Awaitable[None]] | None = None,
) -> None:
    """Turn the progress comment into the report and record the spend and outcome in
    the queue.

    `then` says the outcome elsewhere too (a CI repair: the story's section,
    the pull request's status line), before the queue has it. The report
    carries the outcome and the spend (`reported.py`): it goes first, so
    that once the work is published an attempt that finds the job back in
    the queue writes them rather than run it again.
    """
    services.check_alive(running)
    job = running.job
    outcome = _over_time(running, ended.outcome)
    progress.finish(outcome.conclusion)
    text = render_report(progress.state, outcome)
    if comment is not None:
        text = with_lead(text, comment.lead)  # as posted: the queue keeps that
    stored = stored_outcome(outcome, text, branch=ended.branch, session_id=ended.session_id)
    with services.settler.publishing(job.id):
        if comment is not None:
            try:
                posted = with_outcome(text, job, stored, ended.spend)
                await comment.github.update_progress(comment.id, posted, urgent=True)
            except GitHubError as error:
                services.log("report_failed", job=job.id, error=str(error))
        if then is not None:
            try:
                await then(outcome)
            except GitHubError as error:
                services.log("report_failed", job=job.id, error=str(error))
        await services.finish(running, stored, () if ended.spend_recorded else ended.spend)
    services.log("job_finished", job=job.id, conclusion=outcome.conclusion.value)


def failed_outcome(job: Job, error: Exception) -> Outcome:
    """A job's failure as one line: ours to fix (a traceback in the log) or Neo's kind."""
    if isinstance(error, NeoError):
        return Outcome(conclusion=Conclusion.FAILED, error=error_line(error))
    log.error("job %s failed unexpectedly", job.id, exc_info=error)
    return Outcome(
        conclusion=Conclusion.FAILED,
        error=f"internal error ({type(error).__name__}); the service log has details",
    )


def _over_time(running: Running, outcome: Outcome) -> Outcome:
    """A job stopped by NEO_JOB_TIMEOUT failed, whatever its stopped run concluded.

    What it published (a draft pull request of the work so far) stays named.
    """
    if running.timed_out is None:
        return outcome
    return replace(outcome, conclusion=Conclusion.FAILED, error=overran(running.timed_out))
