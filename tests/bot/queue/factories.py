"""Job requests for queue tests, as triage would make them."""

from __future__ import annotations

from bot.jobs import JobRequest, RequestKind, Thread


def make_request(
    delivery_id: str,
    *,
    repository: str = "octo/hello",
    number: int = 1,
    kind: RequestKind = "run",
    dedupe_key: str | None = None,
    author: str = "alice",
    instruction: str = "@neo fix the flaky date test",
) -> JobRequest:
    return JobRequest(
        kind=kind,
        thread=Thread(repository=repository, number=number),
        installation_id=42,
        event="issue_comment.created",
        trigger_id=1000,
        author=author,
        author_association="OWNER",
        instruction=instruction,
        dedupe_key=dedupe_key or f"comment:{delivery_id}",
        delivery_id=delivery_id,
    )
