"""`neo run --provider openai` end to end: the installed console script, the
real SDK, the fake Responses API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from runner.session import SessionStore
from tests.fakes.openai_responses import (
    ErrorReply,
    FakeOpenAIResponses,
    Reply,
    Usage,
    function_call,
    message,
    reasoning,
)

NEO = Path(sys.executable).with_name("neo")


def neo_run(
    fake: FakeOpenAIResponses, home: Path, *argv: str, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **fake.env, "NEO_HOME": str(home)}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run(
        [str(NEO), "run", "--provider", "openai", "--output-format", "json", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_run_drives_tools_and_resumes_with_its_reasoning(
    fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeting.txt").write_text("hello world\n")
    home = tmp_path / "home"

    def answer(body: dict[str, Any]) -> Reply:
        output = next(i for i in body["input"] if i.get("type") == "function_call_output")
        return Reply([message(f"The file says: {output['output']}")])

    fake_openai.script(
        Reply(
            [
                reasoning(),
                function_call("call_1", "read_file", {"path": "greeting.txt"}),
                function_call(
                    "call_2",
                    "apply_patch",
                    {"input": "*** Begin Patch\n*** Add File: out.txt\n+made\n*** End Patch\n"},
                ),
            ],
            usage=Usage(1_000, 40, cached_tokens=0),
        ),
        answer,
        Reply([message("You asked about greeting.txt.")], usage=Usage(1_500, 10, 1_200)),
    )

    done = neo_run(fake_openai, home, "--repo", str(repo), "--effort", "low", "read it")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is False
    assert "hello world" in result["result"]
    assert result["stop_reason"] == "end_turn"
    assert result["num_turns"] == 2
    assert isinstance(result["cost_usd"], float)
    assert (repo / "out.txt").read_text() == "made\n"
    first = fake_openai.requests[0].body
    assert first["model"] == "gpt-5"
    assert first["store"] is False
    assert first["reasoning"] == {"effort": "low"}
    assert "read_file" in {tool["name"] for tool in first["tools"]}
    # The prompt names the tools gpt-5 has, not Claude's.
    assert "targeted changes with apply_patch" in first["instructions"]
    assert "edit_file" not in first["instructions"]

    # The resumed run replays the saved encrypted reasoning; the fake would refuse it otherwise.
    again = neo_run(fake_openai, home, "--resume", result["session_id"], "what did I ask?")

    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout.strip().splitlines()[-1])
    assert second["result"] == "You asked about greeting.txt."
    assert second["usage"]["cache_read_input_tokens"] == 1_200
    replayed = fake_openai.requests[-1].body["input"]
    assert replayed[1]["type"] == "reasoning"
    assert replayed[1]["encrypted_content"].startswith("gAAAA")
    keys = {request.body["prompt_cache_key"] for request in fake_openai.requests}
    assert len(keys) == 1
    meta = SessionStore(home).load(result["session_id"]).meta
    assert (meta.provider, meta.model) == ("openai", "gpt-5")


def test_a_bad_key_is_one_line_and_exit_1(fake_openai: FakeOpenAIResponses, tmp_path: Path) -> None:
    fake_openai.script(Reply([message("unused")]))

    done = neo_run(fake_openai, tmp_path / "home", "--repo", str(tmp_path), "go", key="sk-bad-4321")

    assert done.returncode == 1
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] == {
        "type": "provider_http_error",
        "message": "openai 401 invalid_api_key: Incorrect API key provided: sk-…. "
        "You can find your API key at https://platform.openai.com/account/api-keys. "
        "(check OPENAI_API_KEY)",
    }
    assert "4321" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert len(fake_openai.requests) == 1


def test_a_rate_limit_is_waited_out(fake_openai: FakeOpenAIResponses, tmp_path: Path) -> None:
    fake_openai.script(
        ErrorReply(429, "rate_limit_exceeded", "Slow down.", "tokens", {"retry-after": "0"}),
        Reply([message("after the wait")]),
    )

    done = neo_run(fake_openai, tmp_path / "home", "--repo", str(tmp_path), "go")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["result"] == "after the wait"
    assert len(fake_openai.requests) == 2


def test_a_missing_key_names_the_variable(fake_openai: FakeOpenAIResponses, tmp_path: Path) -> None:
    done = neo_run(fake_openai, tmp_path / "home", "--repo", str(tmp_path), "go", key="")

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "neo: error: OPENAI_API_KEY is not set (export your OpenAI API key)"
    ]
    assert fake_openai.requests == []
