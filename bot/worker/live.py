"""A job's run of the runner, live: the progress comment edited as it works, its
thread's session held for it and, on a queue that archives sessions, loaded
before and saved after.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.github.client import GitHubError
from bot.queue import LeaseLost, QueueError, SessionArchive
from bot.runs.records import Limits
from bot.worker.context import JobContext, ProgressComment
from bot.worker.progress import Progress, Throttle
from bot.worker.rendering import render_progress
from bot.worker.running import Running, first
from bot.worker.services import JobServices
from bot.worker.sessions import archive_of, read_session_files, write_session_files
from bot.worker.steering import QueueSteering
from runner.job import JobResult, JobSpec, session_id_for
from runner.session import SessionError

__all__ = ["run_live"]


async def run_live(
    services: JobServices,
    ctx: JobContext,
    running: Running,
    spec: JobSpec,
    project_context: str | None,
) -> JobResult:
    """`runner.job.run`, with the progress comment edited while it works."""
    progress = ctx.progress
    changed = asyncio.Event()

    events = running.events

    def on_event(event: Any) -> None:
        progress.apply(event)
        changed.set()
        if events is not None:
            events.event(event)

    done = asyncio.Event()
    live = None
    if ctx.comment is not None:
        live = asyncio.create_task(_live(services, ctx.comment, progress, changed, done))
    options: dict[str, Any] = {}
    if services.mirrors is not None:
        options["cache"] = services.mirrors
    # The same id the runner gives the thread's session; a job without a
    # thread key starts afresh, and leaves nothing a later job continues.
    archive = archive_of(services.queue) if spec.session_key else None
    session_id = session_id_for(spec.session_key) if spec.session_key else None
    loaded = False  # only a run that started from the archived copy saves over it
    try:
        held = spec.session_key is None or await _hold_session(
            services, running, spec.session_key, progress, changed
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
        if events is not None:
            settings = spec.settings
            events.start_run(
                started_at=services.wall_clock(),
                limits=Limits(settings.max_turns, settings.max_cost_usd, settings.time_limit),
                secrets=(spec.token,),
                model=settings.model,
            )
        result = await services.run_job(
            spec,
            on_event=on_event,
            stop=running.stop,
            project_context=project_context,
            # Asked at each turn boundary: `@neo steer` and the run page's Steer.
            steering=QueueSteering(services.queue, running.job.id, services.log),
            **options,
        )
        if events is not None:
            events.run_ended(setup=result.setup, blocked=result.network_blocked)
        return result
    finally:
        done.set()
        if live is not None:
            # An edit still waiting for its turn (mutating calls are spaced)
            # would only hold up the report, which replaces it: it is dropped.
            live.cancel()
            try:
                await live
            except asyncio.CancelledError:
                if _cancelling():
                    raise  # this task's own cancellation, not the edit's
        if loaded and archive is not None and session_id is not None:
            await _archive_session(services, running, archive, spec.data_dir, session_id)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _archive_session(
    services: JobServices,
    running: Running,
    archive: SessionArchive,
    data_dir: Path,
    session_id: str,
) -> None:
    """Save the session the run left, for whichever host takes the thread's next job."""
    job = running.job.id
    try:
        files = await asyncio.to_thread(read_session_files, data_dir, session_id)
        if files is None:
            return  # the agent never started: the archived copy stands
        saved = await archive.save_session(job, services.name, session_id, files)
    except (QueueError, SessionError) as error:
        services.log("session_save_failed", job=job, session=session_id, error=str(error))
        return
    if not saved:
        # Another worker has the job now: its session is the one that counts.
        services.log("session_save_refused", job=job, session=session_id, reason="lease lost")


async def _hold_session(
    services: JobServices,
    running: Running,
    session: str,
    progress: Progress,
    changed: asyncio.Event,
) -> bool:
    """Wait until no other running job uses `session` (an issue's and its pull
    request's jobs share one), then hold it for this job: True.

    A stop while waiting ends the wait (False); the runner then ends the job
    as stopped.
    """
    job = running.job
    waited = False
    while not await _held(services, running, session):
        if not waited:
            waited = True
            services.log("session_busy", job=job.id, session=session)
            progress.note("waiting for another job on this conversation to finish")
            changed.set()
        await first(running.stop.wait(), asyncio.sleep(services.session_wait))
        services.check_alive(running)
        if running.stop.is_set():
            return False
    return True


async def _held(services: JobServices, running: Running, session: str) -> bool:
    try:
        return await services.queue.hold_session(running.job.id, services.name, session)
    except LeaseLost:
        running.lease_lost = True
        services.check_alive(running)
        raise


async def _live(
    services: JobServices,
    comment: ProgressComment,
    progress: Progress,
    changed: asyncio.Event,
    done: asyncio.Event,
) -> None:
    """Edit the progress comment while the job runs: throttled, only when it changed."""
    edit_every = services.edit_every
    throttle = Throttle(edit_every)
    now = services.clock()
    throttle.edited(render_progress(progress.state, now=now), now)
    while not done.is_set():
        now = services.clock()
        text = render_progress(progress.state, now=now)
        delay = throttle.delay(text, now)
        if delay == 0.0:
            try:
                await comment.edit(text)
            except GitHubError as error:  # the report still gets written at the end
                services.log("progress_edit_failed", error=str(error))
            throttle.edited(text, now)
            delay = edit_every
        changed.clear()
        wait = edit_every if delay is None else max(delay, 0.05)
        await first(done.wait(), asyncio.sleep(wait))
