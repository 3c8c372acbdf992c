"""A scripted job: queued, claimed, its records appended as a worker would, then ended."""

from __future__ import annotations

import itertools
import time
import uuid

from bot.jobs import Conclusion, JobOutcome
from bot.queue import JobQueue
from tests.bot.queue.factories import make_request
from tests.bot.runs.live import Live

WORKER = "scripted-worker"
# A thread of its own per job: one run at a time per thread.
_THREADS = itertools.count(1)


async def _start(queue: JobQueue, repository: str, author: str) -> int:
    delivery = str(uuid.uuid4())
    result = await queue.enqueue(
        delivery,
        [make_request(delivery, repository=repository, author=author, number=next(_THREADS))],
    )
    (job_id,) = result.job_ids
    job = await queue.claim(WORKER, 600)
    assert job is not None
    assert job.id == job_id
    return job_id


def start(live: Live, repository: str = "octo/public", author: str = "mona") -> int:
    """A running job with its first record, `state` running."""
    job_id = live.run(lambda queue: _start(queue, repository, author))
    append(live, job_id, ("state", {"state": "running", "model": "claude-test"}))
    return job_id


def append(live: Live, job_id: int, *records: tuple[str, dict[str, object]]) -> int:
    """Append `records` as the worker's flush does; the last seq."""
    now = time.time()
    last: int = live.run(
        lambda queue: queue.append_events(job_id, [(now, kind, data) for kind, data in records])
    )
    return last


def end(live: Live, job_id: int, conclusion: Conclusion = Conclusion.SUCCESS) -> None:
    """End the job as its worker does: the `finished` record, then the outcome."""
    append(live, job_id, ("state", {"state": "finished", "conclusion": conclusion.value}))
    live.run(lambda queue: queue.finish(job_id, WORKER, JobOutcome(conclusion=conclusion)))


def turn(number: int) -> list[tuple[str, dict[str, object]]]:
    """One turn's records: its totals, some text, a call and its result."""
    return [
        (
            "turn",
            {
                "turn": number,
                "input_tokens": 1000 * number,
                "output_tokens": 50 * number,
                "cost_usd": 0.01 * number,
                "limits": {"turns": 200 - number},
            },
        ),
        ("text", {"text": f"turn {number}: looking at the tests"}),
        (
            "tool_call",
            {"call_id": f"c{number}", "name": "bash", "args": {"command": f"pytest -k t{number}"}},
        ),
        (
            "tool_result",
            {
                "call_id": f"c{number}",
                "name": "bash",
                "is_error": False,
                "output": f"{number} passed",
                "output_bytes": 9,
                "truncated": False,
                "duration_ms": 120,
            },
        ),
    ]
