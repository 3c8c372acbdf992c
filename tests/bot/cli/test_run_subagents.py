"""`neo run` with subagents: the real CLI and SDK against the fake Messages API.

The fake answers each request by its shape (a child's request has three
tools and the inspect prompt), so the parent and its child can be told apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from runner.session import SessionStore
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.fakes import Usage as WireUsage

CHILD_MODEL = "claude-haiku-4-5"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "config.py").write_text("PORT = 8080\n")
    return tree


@pytest.fixture
def home(tmp_path: Path, fake_anthropic: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "neo-home"
    for name, value in {**fake_anthropic.env, "NEO_HOME": str(home)}.items():
        monkeypatch.setenv(name, value)
    return home


def tools_of(body: dict[str, Any]) -> list[str]:
    return sorted(tool["name"] for tool in body.get("tools", []))


def last_result(body: dict[str, Any]) -> str:
    block = next(b for b in body["messages"][-1]["content"] if b["type"] == "tool_result")
    return "".join(part["text"] for part in block.get("content", []))


def by_shape(body: dict[str, Any]) -> Reply:
    """The parent delegates, then repeats the answer; the child reads, then reports."""
    child = tools_of(body) == ["glob", "grep", "read_file"]
    turn = len(body["messages"])
    if child and turn == 1:
        return Reply(
            [tool_use("toolu_c1", "read_file", {"path": "config.py"})],
            "tool_use",
            usage=WireUsage(300, 20),
        )
    if child:
        port = last_result(body).split()[-1]
        return Reply([text(f"config.py:1 sets PORT to {port}")], usage=WireUsage(400, 15))
    if turn == 1:
        call = {"description": "find the port", "prompt": "Which port does the app use?"}
        return Reply([tool_use("toolu_p1", "agent", call)], "tool_use", usage=WireUsage(1000, 30))
    return Reply([text(f"The subagent says: {last_result(body)}")], usage=WireUsage(1100, 25))


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["run", "--output-format", "json", *argv])
    return status, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_subagent_answers_through_neo_run_on_its_own_model(
    fake_anthropic: FakeAnthropicAPI,
    home: Path,
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(*([by_shape] * 4))

    status, result = run_json(
        capsys, "--repo", str(repo), "--subagent-model", CHILD_MODEL, "which port?"
    )

    assert status == 0, result
    assert result["result"] == "The subagent says: config.py:1 sets PORT to 8080"
    bodies = [request.body for request in fake_anthropic.requests]
    assert "agent" in tools_of(bodies[0])
    children = [b for b in bodies if tools_of(b) == ["glob", "grep", "read_file"]]
    assert len(children) == 2
    assert {b["model"] for b in children} == {CHILD_MODEL}
    # The run's usage: the parent's two calls and the child's two, each once.
    assert result["usage"]["input_tokens"] == 1000 + 1100 + 300 + 400
    assert result["usage"]["output_tokens"] == 30 + 25 + 20 + 15
    assert result["num_turns"] == 2
    store = SessionStore(home)
    saved = store.load_child(result["session_id"], 1)
    assert saved.meta.model == CHILD_MODEL
    assert saved.messages[-1].text == "config.py:1 sets PORT to 8080"
    # The session's usage carries the child's too.
    assert store.load(result["session_id"]).meta.usage.input_tokens == 2800


def test_no_subagents_leaves_the_agent_tool_out(
    fake_anthropic: FakeAnthropicAPI,
    home: Path,
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("done")]))

    status, _ = run_json(capsys, "--repo", str(repo), "--no-subagents", "hello")

    assert status == 0
    assert "agent" not in tools_of(fake_anthropic.requests[0].body)
    assert "read_file" in tools_of(fake_anthropic.requests[0].body)


def test_subagent_options_without_subagents_are_one_line(
    home: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["run", "--repo", str(repo), "--no-subagents", "--max-subagents", "2", "hi"])

    err = capsys.readouterr().err
    assert status == 2
    assert err.strip().splitlines() == [
        "neo: error: --subagent-model, --max-subagents and --subagent-max-turns need subagents"
        " (no --no-subagents)"
    ]


def test_subagent_max_turns_bounds_each_child_which_then_reports_its_findings(
    fake_anthropic: FakeAnthropicAPI,
    home: Path,
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def searching(body: dict[str, Any]) -> Reply:
        child = tools_of(body) == ["glob", "grep", "read_file"]
        if child and body.get("tool_choice") == {"type": "none"}:
            return Reply([text("config.py:1 sets PORT to 8080; nothing else sets it.")])
        if child:
            call = tool_use(f"toolu_g{len(body['messages'])}", "grep", {"pattern": "PORT"})
            return Reply([call], "tool_use")
        return by_shape(body)

    fake_anthropic.script(*([searching] * 5))

    status, result = run_json(
        capsys, "--repo", str(repo), "--subagent-max-turns", "2", "which port?"
    )

    assert status == 0, result
    children = [
        r.body for r in fake_anthropic.requests if tools_of(r.body) == ["glob", "grep", "read_file"]
    ]
    assert [b.get("tool_choice") for b in children] == [None, None, {"type": "none"}]
    assert result["result"] == (
        "The subagent says: [partial: the subagent stopped before it finished (stopped after"
        " 2 model calls (max turns)); what it found so far:]\n\nconfig.py:1 sets PORT to"
        " 8080; nothing else sets it."
    )
