"""The built-in `github` server: read-only, the job's repository only.

An MCP server of Neo's own (the SDK's `MCPServer`), served through the
gateway like any other, so one mechanism gives the agent every host-side
tool. Its reads go through `GitHubReads` (runner.mcp.reads), which bot/github implements with
the job's client and token: the runner never talks to GitHub itself. Every
tool takes an optional `repository` and refuses any but the job's; what it
returns is other people's text, which the gateway quotes as data.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from runner.mcp.reads import GitHubReadError, GitHubReads, PostView, ThreadView

__all__ = ["github_server"]

_T = TypeVar("_T")
_Number = Annotated[int, Field(ge=1, description="The issue or pull request's number.")]
_Repository = Annotated[
    str | None,
    Field(description="owner/name; the job's repository, the only one this server reads."),
]


def github_server(reads: GitHubReads) -> MCPServer:
    """The `github` server over `reads`, scoped to `reads.repository`."""
    with _root_logger_kept():
        server: MCPServer = MCPServer("github", instructions=None)
    own = reads.repository

    async def read(repository: str | None, what: str, get: Callable[[], Awaitable[_T]]) -> _T:
        if repository is not None and repository.strip().lower() != own.lower():
            raise ToolError(
                f"this server reads {own} only: {repository.strip()} is another"
                " repository, out of this job's reach"
            )
        try:
            return await get()
        except GitHubReadError as error:
            raise ToolError(f"GitHub did not give {what}: {error}") from None

    @server.tool(
        name="issue",
        description=(
            f"An issue or pull request of {own} by number: its title, state, opening post"
            " and every comment, with each author and their association to the repository."
        ),
    )
    async def issue(number: _Number, repository: _Repository = None) -> str:
        found = await read(repository, f"#{number}", lambda: reads.thread(number))
        return _thread_text(found, own)

    @server.tool(
        name="pull_request_diff",
        description=f"A pull request of {own} by number: its diff against its base.",
    )
    async def pull_request_diff(number: _Number, repository: _Repository = None) -> str:
        return await read(repository, f"the diff of #{number}", lambda: reads.diff(number))

    @server.tool(
        name="check_run_log",
        description=(
            f"The end of the log of a check run of {own} (a GitHub Actions job), by the"
            " check run's id, as a check's URL shows it (…/runs/<id>)."
        ),
    )
    async def check_run_log(
        check_run_id: Annotated[int, Field(ge=1, description="The check run's id.")],
        repository: _Repository = None,
    ) -> str:
        log = await read(
            repository,
            f"the log of check run {check_run_id}",
            lambda: reads.check_log(check_run_id),
        )
        shown = len(log.text.encode("utf-8", "replace"))
        head = f"The log of {log.name}"
        if shown < log.total_bytes:
            head += f", its last {shown:,} of {log.total_bytes:,} bytes"
        return f"{head}:\n{log.text}"

    return server


@contextmanager
def _root_logger_kept() -> Iterator[None]:
    """The root logger as it was, whatever happens inside.

    The SDK's `MCPServer` configures logging as if it were the process's main
    program: a rich handler on the root logger at INFO. In a worker that
    printed every library's INFO line (each HTTP request), and Neo's own log
    lines a second time, formatted anew at a cost in CPU for each.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


def _thread_text(thread: ThreadView, repository: str) -> str:
    kind = "Pull request" if thread.is_pull_request else "Issue"
    lines = [
        f"{kind} #{thread.number} of {repository}: {thread.title}",
        f"State: {thread.state}. URL: {thread.url}",
        "",
        _post("Opened", thread.opening),
    ]
    for comment in thread.comments:
        lines.extend(["", _post("Comment", comment)])
    if thread.more_comments:
        lines.extend(["", f"({thread.more_comments:,} newer comments not shown.)"])
    if not thread.comments:
        lines.extend(["", "(No comments.)"])
    return "\n".join(lines)


def _post(what: str, post: PostView) -> str:
    return f"{what} by @{post.author} ({post.association}) at {post.created_at}:\n{post.body}"
