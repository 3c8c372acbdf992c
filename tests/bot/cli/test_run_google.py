"""`neo run --provider google` end to end: the installed console script, the
real google-genai SDK, the fake Gemini API.
The resumed run calls the same `main` in-process: the session still comes
from disk, without a second process start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

from runner.session import SessionStore
from tests.bot.cli.console import console_env, last_json, neo, read_and_wrote
from tests.fakes.gemini_api import FakeGemini, Reply, Usage, call, text, thought
from tests.neo_cli import Neo


def neo_run(
    fake: FakeGemini, home: Path, *argv: str, runner: Callable[..., CompletedProcess[str]] = neo
) -> CompletedProcess[str]:
    """`neo run` with the fake's variables: the console script unless `runner` says."""
    env = console_env(home, fake.env, unset=("ANTHROPIC_API_KEY", "GOOGLE_API_KEY"))
    return runner(env, "run", "--provider", "google", "--output-format", "json", *argv)


def test_a_run_drives_tools_and_resumes_with_its_signatures(
    fake_gemini: FakeGemini,
    repo: Path,
    home: Path,
    neo_main: Neo,
) -> None:

    def answer(body: dict[str, Any]) -> Reply:
        output = body["contents"][-1]["parts"][0]["functionResponse"]["response"]["output"]
        return Reply([text(f"The file says: {output}", signed=True)])

    fake_gemini.script(
        Reply(
            [
                thought("two calls", signed=True),
                call("read_file", {"path": "greeting.txt"}, signed=True),
                call("write_file", {"path": "out.txt", "content": "made\n"}),
            ],
            usage=Usage(1_000, 40),
        ),
        answer,
        Reply([text("You asked about greeting.txt.")], usage=Usage(1_500, 10, cached=1_200)),
    )

    done = neo_run(fake_gemini, home, "--repo", str(repo), "--effort", "low", "read it")

    result = read_and_wrote(done, repo)
    first = fake_gemini.requests[0]
    assert first.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert first.body["generationConfig"]["thinkingConfig"] == {"thinking_budget": 2_048}
    names = {d["name"] for d in first.body["tools"][0]["functionDeclarations"]}
    assert "read_file" in names

    # The resumed run replays the saved signatures; the fake would refuse it otherwise.
    # In this process, through the same main: the session comes from disk.
    again = neo_run(
        fake_gemini, home, "--resume", result["session_id"], "what did I ask?", runner=neo_main
    )

    assert again.returncode == 0, again.stderr
    second = last_json(again)
    assert second["result"] == "You asked about greeting.txt."
    assert second["usage"]["cache_read_input_tokens"] == 1_200
    assert second["usage"]["input_tokens"] == 300
    replayed = fake_gemini.requests[-1].body["contents"][1]["parts"]
    assert "thoughtSignature" in replayed[0]
    assert "thoughtSignature" in replayed[1]
    meta = SessionStore(home).load(result["session_id"]).meta
    assert (meta.provider, meta.model) == ("google", "gemini-2.5-pro")
