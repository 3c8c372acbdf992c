"""The agent's read-only `github` tool, read through the job's client: `JobReads`
implements `runner.mcp.reads.GitHubReads`, which the runner's built-in server calls.

The job's client holds a token scoped to the job's repository, so nothing
else can be read whatever the tool is asked; the server refuses another
repository before asking. Actions logs need `actions: read`, which a task's
token lacks: that client is asked for only when a log is, and a refusal is
the tool's answer, not the job's failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx

from bot.github.app import GitHubAuthError
from bot.github.client import RepoClient
from bot.github.downloads import download_tail
from bot.github.errors import GitHubError
from bot.github.models import Comment
from runner.mcp.reads import GitHubReadError, LogView, PostView, ThreadView
from runner.text import one_line

__all__ = ["JobReads"]

_LOG_TIMEOUT = 30.0


class JobReads:
    """Issues, pull requests, diffs and CI logs of the job's repository, for the model."""

    def __init__(
        self, client: RepoClient, logs: Callable[[], Awaitable[RepoClient]] | None = None
    ) -> None:
        self._client = client
        self._logs = logs

    @property
    def repository(self) -> str:
        return self._client.repository

    async def thread(self, number: int) -> ThreadView:
        try:
            read = await self._client.read_issue(number)
        except GitHubError as error:
            raise GitHubReadError(one_line(error)) from None
        return ThreadView(
            number=read.issue.number,
            title=read.issue.title,
            url=read.html_url,
            is_pull_request=read.is_pull_request,
            state=read.state,
            opening=PostView(
                read.issue.author, read.issue.association, read.issue.created_at, read.issue.body
            ),
            comments=tuple(_post(comment) for comment in read.comments),
            more_comments=read.more_comments,
        )

    async def diff(self, number: int) -> str:
        try:
            return await self._client.pull_request_diff(number)
        except GitHubError as error:
            raise GitHubReadError(one_line(error)) from None

    async def check_log(self, check_run_id: int) -> LogView:
        if self._logs is None:
            raise GitHubReadError("this job cannot read CI logs")
        try:
            client = await self._logs()
            url = await client.log_location("job", check_run_id)
            async with httpx.AsyncClient(timeout=_LOG_TIMEOUT, follow_redirects=True) as plain:
                tail = await download_tail(plain, url, f"check run {check_run_id}")
        except GitHubAuthError as error:
            why = one_line(error)
            raise GitHubReadError(
                f"the App may not read this repository's Actions logs (actions: read): {why}"
            ) from None
        except (GitHubError, httpx.HTTPError) as error:
            raise GitHubReadError(one_line(error)) from None
        return LogView(tail.name, tail.text, tail.total_bytes)


def _post(comment: Comment) -> PostView:
    return PostView(comment.author, comment.association, comment.created_at, comment.body)
