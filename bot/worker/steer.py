"""The steer job, `@neo steer ...`: a message for the thread's run, if its author may start one.

The same rule as for a run and a stop (`allowed_users`, allow-listed bots);
anyone else gets the stop's short reply, and the run goes on untouched. The
message is kept in the queue for the thread's running run (or, when none
runs yet, the one that runs next), whose agent reads it at its next turn
boundary (bot/worker/steering.py). With no run on the thread, one short reply
says how to start one.
"""

from __future__ import annotations

import asyncio

from bot.github.client import RepoClient
from bot.github.comments import ReactionSubject
from bot.intake.mentions import steer_text
from bot.jobs import Conclusion, Job, JobOutcome, JobRequest, JobState, TriggerKind
from bot.queue import JobQueue, QueueError
from bot.worker.access import unauthorised_stop
from bot.worker.refusals import may_ask
from bot.worker.running import Running
from bot.worker.services import JobServices
from runner.errors import NeoError
from runner.text import one_line

__all__ = ["nothing_to_steer", "steer_job", "thread_run"]


async def steer_job(services: JobServices, running: Running) -> None:
    job = running.job
    request = job.request
    outcome = JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised")
    try:
        github = await services.repo_client(request)
        (config, _), level = await asyncio.gather(
            services.config.resolve(github, request), services.access.permission(github, request)
        )
        if may_ask(services, github, request, level, config):
            outcome = await _steer(services, github, job)
        else:
            services.log("steer_refused", job=job.id, author=request.author)
            allowed = (config or services.config.source.fallback()).allowed_users
            where = services.config.source.allowed_users_source()
            await github.reply_once(
                request.thread.number,
                "unauthorised",
                unauthorised_stop(request, allowed, where, verb="steer"),
            )
    except (NeoError, QueueError, ValueError) as error:
        outcome = JobOutcome(conclusion=Conclusion.FAILED, error=one_line(error, None))
        services.log("steer_failed", job=job.id, error=outcome.error)
    services.check_alive(running)
    await services.finish(running, outcome)


async def _steer(services: JobServices, github: RepoClient, job: Job) -> JobOutcome:
    """Keep the comment's message for the thread's run; the outcome says what became of it."""
    request = job.request
    handle = str(getattr(services.settings, "handle", "@neo"))
    text = steer_text(request.instruction, handle)
    target = await thread_run(services.queue, job) if text else None
    kept = None
    if target is not None:
        kept = await services.queue.steer(target.id, request.author, text)
    if kept is None:
        services.log("steer_unplaced", job=job.id, empty=not text)
        await github.reply_once(
            request.thread.number, f"steer-{job.id}", nothing_to_steer(request, handle, text)
        )
        reason = "the steer said nothing" if not text else "no run on this thread to steer"
        return JobOutcome(conclusion=Conclusion.FAILED, error=reason)
    services.log("steer_kept", job=job.id, run=kept.job_id, steer=kept.id)
    await _acknowledge(services, github, request)
    return JobOutcome(conclusion=Conclusion.SUCCESS)


async def thread_run(queue: JobQueue, job: Job) -> Job | None:
    """The run of `job`'s thread a steer is for: the running one, else the next to run."""
    thread = job.request.thread
    for state in (JobState.RUNNING, JobState.QUEUED):
        # A state's jobs of one repository: as many as run at once, or wait.
        found = await queue.list(state=state, repository=thread.repository, limit=1000)
        runs = [j for j in found if j.request.lane == "run" and j.request.thread == thread]
        if runs:
            return min(runs, key=lambda j: j.id)
    return None


def nothing_to_steer(request: JobRequest, handle: str, text: str) -> str:
    """The one reply to a steer with no run to go to, or with no message."""
    if not text:
        return (
            f"@{request.author}, write your message after `{handle} steer`: Neo's run on"
            " this thread reads it before its next step."
        )
    return (
        f"@{request.author}, no run of Neo's is going on in this thread, so there is"
        f" nothing to steer. To start one, mention {handle} with what you want done."
    )


async def _acknowledge(services: JobServices, github: RepoClient, request: JobRequest) -> None:
    """👀 on the comment: the run has the message (it reads it at its next step)."""
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
