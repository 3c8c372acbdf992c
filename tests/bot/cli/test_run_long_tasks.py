"""`neo run` on long tasks, end to end: the real CLI and SDK, the fake Messages API.

What keeps a long run's work: a response cut at the output limit goes on
(and only a third cut in a row ends the run, with its last word).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from runner.continuation import cut_note
from runner.llm.limits import limits_for
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use

MODEL = "claude-sonnet-5-5"


@pytest.fixture
def env(fake_anthropic: FakeAnthropicAPI, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**fake_anthropic.env, "NEO_HOME": str(home)}.items():
        monkeypatch.setenv(name, value)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["run", "--output-format", "json", "--model", MODEL, *argv])
    return status, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def cut(words: str) -> Reply:
    """A response cut at the output limit inside a large write_file call."""
    big = {"path": "module.py", "content": "x = 1\n" * 50}
    return Reply([text(words), tool_use(f"cut-{words}", "write_file", big)], "max_tokens")


def write(name: str) -> Reply:
    call = tool_use(f"w-{name}", "write_file", {"path": name, "content": "part\n"})
    return Reply([call], "tool_use")


@pytest.mark.usefixtures("env")
def test_one_cut_response_then_success_is_one_run_with_no_last_word(
    fake_anthropic: FakeAnthropicAPI, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_anthropic.script(
        cut("Writing module.py whole:"),
        write("module.py"),
        Reply([text("module.py is written, in parts.")]),
    )

    code, result = run_json(capsys, "--repo", str(repo), "write module.py")

    assert (code, result["error"], result["num_turns"]) == (0, None, 3)
    assert result["result"] == "module.py is written, in parts."
    assert (repo / "module.py").read_text() == "part\n"
    bodies = [r.body for r in fake_anthropic.requests]
    assert not any(b.get("tool_choice") == {"type": "none"} for b in bodies)
    assert [b["max_tokens"] for b in bodies] == [32_000, limits_for(MODEL).max_output, 32_000]
    told = bodies[1]["messages"][-1]["content"][-1]
    assert told["text"] == cut_note(32_000)


@pytest.mark.usefixtures("env")
def test_three_cut_responses_end_the_run_with_its_last_word(
    fake_anthropic: FakeAnthropicAPI, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    fake_anthropic.script(
        write("notes.txt"),
        cut("one"),
        cut("two"),
        cut("three"),
        Reply([text("Wrote notes.txt; module.py is still to write.")]),
    )

    code, result = run_json(capsys, "--repo", str(repo), "write module.py")

    assert code == 1
    assert result["error"] == {
        "type": "max_output_tokens",
        "message": "the response hit the output token limit 3 times in a row",
    }
    assert result["num_turns"] == 4
    assert result["result"] == "Wrote notes.txt; module.py is still to write."
    assert fake_anthropic.requests[-1].body["tool_choice"] == {"type": "none"}
    assert len(fake_anthropic.requests) == 5
    assert not (repo / "module.py").exists()
