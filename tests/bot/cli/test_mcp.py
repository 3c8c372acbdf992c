"""`neo run --mcp-config FILE` and `neo mcp list`, with the reference `mcp-server-time`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use

SERVERS = """\
servers:
  time: {command: [mcp-server-time], tools: [get_current_time]}
  web: {url: "https://mcp.example.com/mcp", tools: ["*"]}
"""
REFUSED = (
    "the job's network does not allow mcp.example.com (add it to `network.allow`, or the"
    " operator to NEO_MCP_URLS)"
)


@pytest.fixture
def env(
    fake_anthropic: FakeAnthropicAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    values = {
        **fake_anthropic.env,
        "NEO_HOME": str(home),
        "NEO_MCP_COMMANDS": "mcp-server-time",
        # Where uv put the reference server.
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NEO_NETWORK", raising=False)
    return values


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    status = main(["run", "--output-format", "json", *argv])
    captured = capsys.readouterr()
    return status, json.loads(captured.out.strip().splitlines()[-1]), captured.err


def test_a_run_gets_the_files_servers_and_says_which_it_went_without(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "mcp.yml"
    config.write_text(SERVERS)
    fake_anthropic.script(
        Reply([tool_use("t1", "time__get_current_time", {"timezone": "UTC"})], "tool_use"),
        Reply([text("It is late.")]),
    )

    code, result, err = run_json(
        capsys, "--repo", str(repo), "--mcp-config", str(config), "what time is it?"
    )

    assert code == 0, err
    assert result["mcp"] == {
        "skipped": [{"server": "web", "reason": REFUSED}],
        "calls": {"time__get_current_time": 1},
    }
    assert f"neo: MCP server 'web' left out: {REFUSED}\n" in err
    answer = fake_anthropic.requests[1].body["messages"][-1]["content"][0]["content"][0]["text"]
    assert '"timezone": "UTC"' in answer


def test_a_run_without_servers_says_nothing_of_mcp(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("Nothing to do.")]))

    code, result, _ = run_json(capsys, "--repo", str(repo), "look")

    assert code == 0
    assert result["mcp"] is None
    tools = [tool["name"] for tool in fake_anthropic.requests[0].body["tools"]]
    assert not [name for name in tools if "__" in name]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "--mcp-config {path}: No such file or directory"),
        (
            "servers: {docs: {command: [mcp-docs], tools: ['*']}}\n",
            "{path}: servers.docs.command: the operator does not allow the command 'mcp-docs'"
            " (NEO_MCP_COMMANDS)",
        ),
        ("mcp: {servers: {}}\n", "{path}: unknown field 'mcp'"),
    ],
)
def test_a_bad_file_is_one_line_and_runs_nothing(
    env: dict[str, str],
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_anthropic: FakeAnthropicAPI,
    text: str | None,
    message: str,
) -> None:
    path = tmp_path / "mcp.yml"
    if text is not None:
        path.write_text(text)

    status = main(["run", "--repo", str(repo), "--mcp-config", str(path), "go"])

    err = capsys.readouterr().err
    assert status == 2
    assert err == f"neo: error: {message.format(path=path)}\n"
    assert fake_anthropic.requests == []


def test_mcp_list_shows_what_a_job_would_get_and_why_not(
    env: dict[str, str], repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".github").mkdir()
    (repo / ".github" / "neo.yml").write_text(
        "mcp:\n" + "".join(f"  {line}\n" for line in SERVERS.splitlines())
    )

    assert main(["mcp", "list", "--repo", str(repo)]) == 0
    shown = capsys.readouterr().out
    assert main(["mcp", "list", "--repo", str(repo), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)

    assert shown.split("\n\n")[0] == (
        "time  (mcp-server-time)\n"
        "  + time__get_current_time\n"
        "  - convert_time: not in the server's `tools`"
    )
    assert (
        f"web  (https://mcp.example.com/mcp)\n  left out (a job goes without it): {REFUSED}"
        in shown
    )
    servers = {entry["server"]: entry for entry in listed["servers"]}
    assert servers["web"]["started"] is False
    assert servers["github"]["tools"] == [
        "github__issue", "github__pull_request_diff", "github__check_run_log"
    ]  # fmt: skip


def test_mcp_list_names_a_server_the_operator_does_not_allow(
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NEO_MCP_COMMANDS")
    (repo / ".github").mkdir()
    (repo / ".github" / "neo.yml").write_text(
        "mcp: {servers: {time: {command: [mcp-server-time], tools: ['*']}}}\n"
    )

    assert main(["mcp", "list", "--repo", str(repo)]) == 2
    assert capsys.readouterr().err == (
        "neo: error: .github/neo.yml: mcp.servers.time.command: the operator does not allow"
        " the command 'mcp-server-time' (NEO_MCP_COMMANDS)\n"
    )
