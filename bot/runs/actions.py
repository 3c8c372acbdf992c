"""What the run page's writers do to a run: stop it, and steer it.

The web routes check the viewer's write access (the rule of `@neo`,
bot/worker/access.py) before they call these; here the queue does the rest,
so a run on another host is stopped or steered the same way.
"""

from __future__ import annotations

import contextlib
import time

from bot.jobs import JobState
from bot.queue import JobQueue, QueueError, Steer

__all__ = ["steer_run", "stop_run"]

_LIVE = frozenset({JobState.QUEUED, JobState.RUNNING})


async def stop_run(queue: JobQueue, job_id: int, by: str) -> bool:
    """Stop run `job_id` as `@neo stop` stops it, in the name of `by` (a login).

    A queued run is cancelled; a running one is asked to stop, and its worker
    winds it down and reports "Cancelled by @by". The run's log gets a `stop`
    record naming `by`. False when `job_id` is not a queued or running run.
    """
    job = await queue.get(job_id)
    if job is None or job.request.lane != "run" or job.state not in _LIVE:
        return False
    if not await queue.cancel(job_id, by=by):
        return False
    # The run's log says who, where its watchers read; the stop stands without it.
    with contextlib.suppress(QueueError):
        await queue.append_events(job_id, [(time.time(), "stop", {"by": by})])
    return True


async def steer_run(queue: JobQueue, job_id: int, by: str, text: str) -> Steer | None:
    """Leave `text` for run `job_id` from `by` (a login): its agent reads it at its
    next turn boundary, quoted as `by`'s request.

    None when `job_id` is not a queued or running run; ValueError, one line,
    when the text is empty or too long (`bot.queue.check_steer`).
    """
    return await queue.steer(job_id, by, text.strip())
