"""The GraphQL documents Neo sends (review threads, resolving one) and their answers read (pure).

GitHub's REST API can neither tell whether a review thread is outdated nor
resolve one; these two operations can. Threads come 100 to a page (GitHub's
largest); `RepoClient.review_threads` follows the cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from bot.github.errors import GitHubError
from bot.github.models import ReviewThread

__all__ = [
    "RESOLVE_THREAD",
    "REVIEW_THREADS",
    "ThreadPage",
    "resolved_thread",
    "review_threads",
]

REVIEW_THREADS: Final = """
query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated
          comments(first: 1) { nodes { databaseId author { login } body path line } }
        }
      }
    }
  }
}
"""

RESOLVE_THREAD: Final = """
mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}
"""


def _shape(what: str) -> GitHubError:
    return GitHubError(f"github: GraphQL answered {what} in an unexpected shape")


@dataclass(frozen=True, slots=True)
class ThreadPage:
    """One page of a `REVIEW_THREADS` answer, and the cursor of the next (None: the last)."""

    threads: tuple[ReviewThread, ...]
    after: str | None


def review_threads(data: Mapping[str, Any]) -> ThreadPage:
    """The threads in a `REVIEW_THREADS` answer's `data`; a thread with no comment is skipped."""
    try:
        pull = data["repository"]["pullRequest"]
        nodes = pull["reviewThreads"]["nodes"]
        page = pull["reviewThreads"].get("pageInfo") or {}
        cursor = page.get("endCursor")
        after = cursor if page.get("hasNextPage") is True and isinstance(cursor, str) else None
        threads = []
        for node in nodes:
            comments = node["comments"]["nodes"]
            if not comments:
                continue
            first = comments[0]
            author = first.get("author") or {}
            line = first.get("line")
            database_id = first.get("databaseId")
            threads.append(
                ReviewThread(
                    id=str(node["id"]),
                    resolved=node["isResolved"] is True,
                    outdated=node["isOutdated"] is True,
                    # A deleted account has no author, as REST's "ghost".
                    author=str(author.get("login") or "ghost"),
                    body=str(first.get("body") or ""),
                    path=str(first.get("path") or ""),
                    line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                    comment_id=database_id if _whole(database_id) else None,
                )
            )
    except (KeyError, TypeError):
        raise _shape("the review threads") from None
    return ThreadPage(tuple(threads), after)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def resolved_thread(data: Mapping[str, Any]) -> str:
    """The id of the thread a `RESOLVE_THREAD` answer's `data` says is resolved."""
    try:
        thread = data["resolveReviewThread"]["thread"]
        if thread["isResolved"] is not True:
            raise _shape("a thread still open")
        return str(thread["id"])
    except (KeyError, TypeError):
        raise _shape("the resolved thread") from None
