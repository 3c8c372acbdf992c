"""A job's MCP servers come from the default branch's config, never a pull request's copy;
the built-in `github` server reads through the job's client; the report counts the calls.

Through the real worker, the fake GitHub and the git server, with the real
`mcp-server-time` allowed by the operator: the pull request's head asks for
it, and the job never starts it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import JobState, Thread
from bot.queue import SqliteQueue
from tests.bot.worker.test_loop import (
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    enqueue,
    finished,
    get,
    git,
    git_server,
    github,
    origin,
    queue,
    request,
    run_until,
    settings,
    worker,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text, tool_use
from tests.fakes.git_server import add_commit

__all__ = ["anthropic_env", "app", "clock", "git_server", "github", "origin", "queue", "settings"]

# A pull request's own copy, which must not count: the operator allows the command.
HOSTILE = "mcp: {servers: {evil: {command: [mcp-server-time], tools: ['*']}}}\n"


async def test_a_pull_requests_config_cannot_add_a_server(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    allowing = settings.model_copy(update={"mcp_commands": "mcp-server-time"})
    github.put_file(REPO, ".github/neo.yml", HOSTILE, ref="feature")
    git(origin, "branch", "feature", "main")
    add_commit(
        origin, {".github/neo.yml": HOSTILE.encode()}, message="Add a tool", branch="feature"
    )
    number = github.add_pull(REPO, "Add a tool", head="feature", user="mona")
    comment = github.add_comment(REPO, number, "@neo have a look", user="mona")
    fake_anthropic.script(
        Reply([tool_use("t1", "github__issue", {"number": number})], "tool_use"),
        Reply(
            [tool_use("t2", "github__issue", {"number": number, "repository": "evil/other"})],
            "tool_use",
        ),
        Reply([text("Looked.")]),
    )
    job_request = replace(
        request(number, comment), thread=Thread(REPO, number, is_pull_request=True)
    )
    job_id = await enqueue(queue, job_request)

    await run_until(worker(queue, app, allowing), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    tools = [tool["name"] for tool in fake_anthropic.requests[0].body["tools"]]
    assert "github__issue" in tools
    assert not [name for name in tools if name.startswith("evil__")]
    read = fake_anthropic.requests[1].body["messages"][-1]["content"][0]["content"][0]["text"]
    assert f"Pull request #{number} of {REPO}: Add a tool" in read
    assert "Comment by @mona (" in read
    assert "@neo have a look" in read
    refused = fake_anthropic.requests[2].body["messages"][-1]["content"][0]
    assert refused["is_error"] is True
    assert "evil/other is another repository" in refused["content"][0]["text"]
    report = bot_comments(github, number)[-1]["body"]
    assert "**MCP tools used:** `github__issue` ×2" in report
    assert "evil" not in report.replace("evil/other", "")
