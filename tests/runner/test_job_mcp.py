"""A job's MCP servers, end to end through runner.job.run: the gateway on the host side,
its tools called by the loop, the secret kept to the server, the report's counts."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.agent import Event, ToolNotice
from runner.job import JobSpec, run
from runner.mcp import Command, McpSettings, Operator, ServerSpec
from runner.mcp.report import McpSkipped, Skipped
from runner.mcp.run import McpRun
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.runner.mcp.conftest import PROBE
from tests.runner.mcp.servers.probe import INSTRUCTIONS
from tests.runner.mcp.test_gateway import Reads
from tests.runner.test_job import anthropic_env, data_dir, make_spec, origin, server

__all__ = ["anthropic_env", "data_dir", "make_spec", "origin", "server"]

pytestmark = pytest.mark.usefixtures("anthropic_env")

SECRET = "mcp-s3cr3t-91f0a7"


def tool_result(fake: FakeAnthropicAPI, index: int) -> str:
    content = fake.requests[index].body["messages"][-1]["content"][0]["content"]
    return "".join(part["text"] for part in content)


async def test_a_jobs_servers_serve_the_loop_and_their_secret_stays_with_them(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The operator's environment, as the worker's process has it.
    monkeypatch.setenv("NEO_MCP_TOKEN", SECRET)
    monkeypatch.setenv("NEO_MCP_COMMANDS", sys.executable)
    caplog.set_level(logging.DEBUG)
    fake_anthropic.script(
        Reply([tool_use("t1", "probe__env", {"name": "TOKEN"})], "tool_use"),
        Reply([tool_use("t2", "bash", {"command": "env; cat /proc/self/environ"})], "tool_use"),
        Reply([tool_use("t3", "github__issue", {"number": 7})], "tool_use"),
        Reply([tool_use("t4", "probe__env", {"name": "PATH"})], "tool_use"),
        Reply([text("Read the issue.")]),
    )
    settings = McpSettings(
        servers=(
            ServerSpec("probe", Command(PROBE), ("env",), secrets=("TOKEN",)),
            ServerSpec("docs", Command(("mcp-docs",)), ("*",)),
        )
    )
    events: list[Event] = []
    spec = make_spec(mcp=McpRun(settings, Operator.from_environ(), github=Reads()))

    result = await run(spec, on_event=events.append)

    assert result.conclusion == "no_changes", result
    assert "[secret TOKEN]" in tool_result(fake_anthropic, 1)  # the server had it
    assert "Issue #7 of octo/hello" in tool_result(fake_anthropic, 3)
    assert result.mcp.calls == (("probe__env", 2), ("github__issue", 1))
    skipped = Skipped(
        "docs", "the command 'mcp-docs' is not one the operator allows (NEO_MCP_COMMANDS)"
    )
    assert result.mcp.skipped == (skipped,)
    assert ToolNotice("", "mcp", McpSkipped((skipped,))) in events
    # Never in the sandbox, the transcript, the session, the logs or the result.
    assert SECRET not in tool_result(fake_anthropic, 2)
    assert all(SECRET not in json.dumps(request.body) for request in fake_anthropic.requests)
    # The job's tree is removed in the background (runner/trash.py): a file or
    # a whole directory may go while this walks (os.walk skips what went).
    for folder, _, names in os.walk(data_dir):
        for name in names:
            saved = Path(folder) / name
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                assert SECRET.encode() not in saved.read_bytes(), saved
    assert SECRET not in caplog.text
    assert SECRET not in repr(result)
    # The server's instructions never reach the system prompt.
    assert all(INSTRUCTIONS not in json.dumps(r.body["system"]) for r in fake_anthropic.requests)


async def test_a_required_server_that_does_not_start_fails_the_job_in_one_line(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI
) -> None:
    settings = McpSettings(
        servers=(ServerSpec("docs", Command(("mcp-docs",)), ("*",), required=True),),
        github=False,
    )

    result = await run(make_spec(mcp=McpRun(settings, Operator())))

    assert result.conclusion == "failed"
    assert result.error_kind == "config_error"
    assert result.error_message == (
        "MCP server 'docs' is required and did not start: the command 'mcp-docs' is not one"
        " the operator allows (NEO_MCP_COMMANDS)"
    )
    assert fake_anthropic.requests == []  # no model call was made
