"""Answering review threads on Neo's own pull request (pure): which threads a job answers,
what its reply says, which threads the pushed change resolves.

A thread is named by its first comment's id: a reply to a reply joins the
same thread on GitHub, and GraphQL's thread listing gives that id too.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.github.models import ReviewComment, ReviewThread
from bot.worker.untrusted import neutralise
from runner.job import JobResult

__all__ = ["ANSWER_LIMIT", "answered_threads", "reply_key", "thread_answer", "threads_to_resolve"]

# A reply answers one point; the progress comment has the whole report.
ANSWER_LIMIT = 1500


def answered_threads(comments: Iterable[ReviewComment]) -> tuple[int, ...]:
    """The threads `comments` (a trigger comment, a review's inline ones) belong to, in order."""
    tops: dict[int, None] = {}
    for comment in comments:
        tops.setdefault(comment.in_reply_to or comment.comment.id)
    return tuple(tops)


def reply_key(job_id: int | str, thread: int) -> str:
    """The marker key of job `job_id`'s one reply in `thread`: a retried job finds it."""
    return f"thread-{job_id}-{thread}"


def thread_answer(result: JobResult, pr_url: str | None) -> str:
    """The reply in a review thread: what was pushed for it, or the model's answer."""
    summary = neutralise(result.summary.strip())
    if len(summary) > ANSWER_LIMIT:
        summary = summary[: ANSWER_LIMIT - 1].rstrip() + "…"
    if result.changed:
        sha = result.commit
        if sha and pr_url:
            head = f"Pushed [`{sha[:7]}`]({pr_url}/commits/{sha}) for this."
        elif sha:
            head = f"Pushed `{sha[:7]}` for this."
        else:
            head = "Pushed a change for this."
        return f"{head}\n\n{summary}" if summary else head
    if result.error_kind is not None:
        stopped = f"Neo stopped before pushing anything ({result.error_kind})."
        return f"{stopped}\n\n{summary}" if summary else stopped
    return summary or "Neo changed nothing for this and had nothing to add."


def threads_to_resolve(threads: Iterable[ReviewThread], answered: Iterable[int]) -> tuple[str, ...]:
    """The ids of the open threads among `threads` whose first comment is in `answered`."""
    wanted = set(answered)
    return tuple(
        thread.id
        for thread in threads
        if not thread.resolved and thread.comment_id is not None and thread.comment_id in wanted
    )
