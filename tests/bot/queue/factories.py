"""Job requests for queue tests, as triage would make them."""

from __future__ import annotations

from bot.jobs import JobKind, JobRequest, Thread, TriggerKind
from bot.queue.base import JobQueue


def make_request(
    delivery_id: str,
    *,
    repository: str = "octo/hello",
    number: int = 1,
    kind: JobKind = JobKind.TASK,
    dedupe_key: str | None = None,
    author: str = "alice",
    instruction: str = "@neo fix the flaky date test",
) -> JobRequest:
    return JobRequest(
        kind=kind,
        thread=Thread(repository=repository, number=number),
        installation_id=42,
        event="issue_comment.created",
        trigger=TriggerKind("issue_comment.created"),
        trigger_id=1000,
        author=author,
        author_association="OWNER",
        instruction=instruction,
        dedupe_key=dedupe_key or f"comment:{delivery_id}",
        delivery_id=delivery_id,
    )


class FakeClock:
    """Unix time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def enqueue_one(
    queue: JobQueue, delivery_id: str, *, repository: str = "octo/hello", number: int = 1
) -> int:
    request = make_request(delivery_id, repository=repository, number=number)
    result = await queue.enqueue(delivery_id, [request])
    assert not result.duplicate
    (job_id,) = result.job_ids
    return job_id
