"""`neo jobs logs ID [--follow] [--format text|json]`: a job's event log, oldest first.

With `--follow` it prints what comes as it comes and ends when the job does: at
its `finished` state record, or, for a job that ended without one (its worker
died), once the queue says it ended and nothing more has come for a moment.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from bot.cli.run_log_text import TextLog
from bot.jobs import JobState
from bot.queue import JobQueue, RunEvent

__all__ = ["print_logs"]

_PAGE = 1000
# How long a follower waits for events before it asks the queue whether the job ended.
_WAIT = 1.0
# A job the queue says has ended, without a `finished` record: the worker's last
# append may be on its way (it writes the record just before the outcome).
_SETTLE = 3.0
_ENDED = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


async def print_logs(
    queue: JobQueue, job_id: int, *, follow: bool, as_json: bool, out: TextIO | None = None
) -> bool:
    """Print job `job_id`'s events (to stdout); False when the queue has no such job."""
    out = out or sys.stdout
    job = await queue.get(job_id)
    if job is None:
        return False
    text = TextLog()

    def show(events: list[RunEvent]) -> None:
        for event in events:
            out.write(json.dumps(event.to_json()) + "\n" if as_json else text.render(event))
        out.flush()

    after = 0
    finished = False
    while True:
        events = await queue.events_after(job_id, after, limit=_PAGE)
        show(events)
        if events:
            after = events[-1].seq
            finished = _finished(events, finished)
        if len(events) < _PAGE:
            break
    if follow and not finished:
        quiet_since: float | None = None
        while True:
            events = await queue.wait_events(job_id, after, _WAIT)
            if events:
                show(events)
                after = events[-1].seq
                quiet_since = None
                if _finished(events, False):
                    break
                continue
            job = await queue.get(job_id)
            if job is None or job.state in _ENDED:
                quiet_since = (quiet_since or 0.0) + _WAIT
                if quiet_since >= _SETTLE:
                    break
    if not as_json:
        out.write(text.end())
        out.flush()
    return True


def _finished(events: list[RunEvent], before: bool) -> bool:
    """Whether the last state record, in `events` or `before` them, is `finished`
    (a job retried after it ended runs again)."""
    for event in reversed(events):
        if event.kind == "state":
            return event.data.get("state") == "finished"
    return before
