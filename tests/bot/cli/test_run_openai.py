"""`neo run --provider openai` end to end: the installed console script, the
real SDK, the fake Responses API.
The resumed run calls the same `main` in-process: the session still comes
from disk, without a second process start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

from runner.session import SessionStore
from tests.bot.cli.console import console_env, last_json, neo, read_and_wrote
from tests.fakes.openai_responses import (
    FakeOpenAIResponses,
    Reply,
    Usage,
    custom_tool_call,
    function_call,
    message,
    reasoning,
)
from tests.neo_cli import Neo


def neo_run(
    fake: FakeOpenAIResponses,
    home: Path,
    *argv: str,
    runner: Callable[..., CompletedProcess[str]] = neo,
) -> CompletedProcess[str]:
    """`neo run` with the fake's variables: the console script unless `runner` says."""
    env = console_env(home, fake.env, unset=("ANTHROPIC_API_KEY",))
    return runner(env, "run", "--provider", "openai", "--output-format", "json", *argv)


def test_a_run_drives_tools_and_resumes_with_its_reasoning(
    fake_openai: FakeOpenAIResponses,
    repo: Path,
    home: Path,
    neo_main: Neo,
) -> None:

    def answer(body: dict[str, Any]) -> Reply:
        output = next(i for i in body["input"] if i.get("type") == "function_call_output")
        return Reply([message(f"The file says: {output['output']}")])

    fake_openai.script(
        Reply(
            [
                reasoning(),
                function_call("call_1", "read_file", {"path": "greeting.txt"}),
                # Free-form: GPT-5 is offered apply_patch as a custom tool.
                custom_tool_call(
                    "call_2",
                    "apply_patch",
                    "*** Begin Patch\n*** Add File: out.txt\n+made\n*** End Patch\n",
                ),
            ],
            usage=Usage(1_000, 40, cached_tokens=0),
        ),
        answer,
        Reply([message("You asked about greeting.txt.")], usage=Usage(1_500, 10, 1_200)),
    )

    done = neo_run(fake_openai, home, "--repo", str(repo), "--effort", "low", "read it")

    result = read_and_wrote(done, repo)
    first = fake_openai.requests[0].body
    assert first["model"] == "gpt-5"
    assert first["store"] is False
    assert first["reasoning"] == {"effort": "low"}
    assert "read_file" in {tool["name"] for tool in first["tools"]}
    # The prompt names the tools gpt-5 has, not Claude's.
    assert "targeted changes with apply_patch" in first["instructions"]
    assert "edit_file" not in first["instructions"]

    # The resumed run replays the saved encrypted reasoning; the fake would refuse it otherwise.
    # In this process, through the same main: the session comes from disk.
    again = neo_run(
        fake_openai, home, "--resume", result["session_id"], "what did I ask?", runner=neo_main
    )

    assert again.returncode == 0, again.stderr
    second = last_json(again)
    assert second["result"] == "You asked about greeting.txt."
    assert second["usage"]["cache_read_input_tokens"] == 1_200
    replayed = fake_openai.requests[-1].body["input"]
    assert replayed[1]["type"] == "reasoning"
    assert replayed[1]["encrypted_content"].startswith("gAAAA")
    keys = {request.body["prompt_cache_key"] for request in fake_openai.requests}
    assert len(keys) == 1
    meta = SessionStore(home).load(result["session_id"]).meta
    assert (meta.provider, meta.model) == ("openai", "gpt-5")
