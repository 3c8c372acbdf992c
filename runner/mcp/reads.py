"""What the built-in `github` server reads, and the protocol `bot/github` implements to read it.

Values only, and no SDK: the bot imports this without the MCP server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["GitHubReadError", "GitHubReads", "LogView", "PostView", "ThreadView"]


@dataclass(frozen=True, slots=True)
class PostView:
    """An opening post or a comment, as its author wrote it."""

    author: str
    association: str
    created_at: str
    body: str


@dataclass(frozen=True, slots=True)
class ThreadView:
    """An issue or a pull request, with its comments oldest first."""

    number: int
    title: str
    url: str
    is_pull_request: bool
    state: str
    opening: PostView
    comments: tuple[PostView, ...] = ()
    # Comments GitHub holds beyond those read (the newest).
    more_comments: int = 0


@dataclass(frozen=True, slots=True)
class LogView:
    """The end of a CI log: `text` is its last part, of `total_bytes` in all."""

    name: str
    text: str
    total_bytes: int


class GitHubReadError(Exception):
    """What the model should read instead of an answer (not found, too large); one line."""


class GitHubReads(Protocol):
    """Reads of one repository through Neo's GitHub client, with the job's token.

    Raise GitHubReadError for an answer GitHub did not give.
    """

    @property
    def repository(self) -> str:
        """owner/name."""
        ...

    async def thread(self, number: int) -> ThreadView: ...

    async def diff(self, number: int) -> str: ...

    async def check_log(self, check_run_id: int) -> LogView: ...
