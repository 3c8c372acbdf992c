"""Any issue or pull request of the repository by number, with its comments: what the
agent's read-only `github` tool asks for (`bot.github.job_reads`)."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

from githubkit.utils import UNSET
from githubkit_schemas.latest.models import IssueComment

from bot.github.models import Comment, Issue
from bot.github.repo_base import PAGE, RepoBase, association_of, comment_of

__all__ = ["IssueRead", "Issues"]

# A thread's comments, newest last: enough for any the model should read.
_MAX_COMMENT_PAGES = 10


@dataclass(frozen=True, slots=True)
class IssueRead:
    """An issue or pull request as GitHub shows it: its post, state, page and comments."""

    issue: Issue
    state: str
    html_url: str
    is_pull_request: bool
    comments: tuple[Comment, ...]
    # Comments there are beyond those read (the oldest are read).
    more_comments: int = 0


class Issues(RepoBase):
    """Issues and pull requests of the repository, read by number."""

    async def read_issue(self, number: int) -> IssueRead:
        """Issue or pull request `number`, and its first comments, oldest first."""
        base = f"/repos/{self.repository}"
        rest = self._github.rest
        issue = (
            await self._retrying(
                lambda: self._call(
                    "GET",
                    f"{base}/issues/{number}",
                    lambda: rest.issues.async_get(self.owner, self.name, number),
                )
            )
        ).parsed_data
        comments: list[IssueComment] = []
        pages = self._each_page(
            f"{base}/issues/{number}/comments",
            functools.partial(
                rest.issues.async_list_comments, self.owner, self.name, number, per_page=PAGE
            ),
            list[IssueComment],
        )
        async with contextlib.aclosing(pages):
            read = 0
            async for page in pages:
                comments.extend(page)
                read += 1
                if read >= _MAX_COMMENT_PAGES:
                    break
        total = int(issue.comments) if isinstance(issue.comments, int) else len(comments)
        opening = Issue(
            number=issue.number,
            title=issue.title,
            author=issue.user.login if issue.user else "ghost",
            association=association_of(issue.author_association),
            body=issue.body if isinstance(issue.body, str) else "",
            created_at=str(issue.created_at),
        )
        return IssueRead(
            issue=opening,
            state=str(issue.state),
            html_url=str(issue.html_url),
            is_pull_request=issue.pull_request not in (None, UNSET),
            comments=tuple(comment_of(c) for c in comments),
            more_comments=max(0, total - len(comments)),
        )
