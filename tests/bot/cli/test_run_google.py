"""`neo run --provider google` end to end: the installed console script, the
real google-genai SDK, the fake Gemini API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from runner.session import SessionStore
from tests.fakes.gemini_api import FakeGemini, Reply, Usage, call, rate_limited, text, thought

NEO = Path(sys.executable).with_name("neo")


def neo_run(
    fake: FakeGemini, home: Path, *argv: str, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **fake.env, "NEO_HOME": str(home)}
    for name in ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    if key is not None:
        env["GEMINI_API_KEY"] = key
    return subprocess.run(
        [str(NEO), "run", "--provider", "google", "--output-format", "json", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_run_drives_tools_and_resumes_with_its_signatures(
    fake_gemini: FakeGemini, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeting.txt").write_text("hello world\n")
    home = tmp_path / "home"

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

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is False
    assert "hello world" in result["result"]
    assert result["stop_reason"] == "end_turn"
    assert result["num_turns"] == 2
    assert isinstance(result["cost_usd"], float)
    assert (repo / "out.txt").read_text() == "made\n"
    first = fake_gemini.requests[0]
    assert first.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert first.body["generationConfig"]["thinkingConfig"] == {"thinking_budget": 2_048}
    names = {d["name"] for d in first.body["tools"][0]["functionDeclarations"]}
    assert "read_file" in names

    # The resumed run replays the saved signatures; the fake would refuse it otherwise.
    again = neo_run(fake_gemini, home, "--resume", result["session_id"], "what did I ask?")

    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout.strip().splitlines()[-1])
    assert second["result"] == "You asked about greeting.txt."
    assert second["usage"]["cache_read_input_tokens"] == 1_200
    assert second["usage"]["input_tokens"] == 300
    replayed = fake_gemini.requests[-1].body["contents"][1]["parts"]
    assert "thoughtSignature" in replayed[0]
    assert "thoughtSignature" in replayed[1]
    meta = SessionStore(home).load(result["session_id"]).meta
    assert (meta.provider, meta.model) == ("google", "gemini-2.5-pro")


def test_a_bad_key_is_one_line_and_exit_1(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.script(Reply([text("unused")]))
    key = "AIzaSyBadKeyForTheTest-4321"

    done = neo_run(fake_gemini, tmp_path / "home", "--repo", str(tmp_path), "go", key=key)

    assert done.returncode == 1
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] == {
        "type": "provider_http_error",
        "message": "google 400 INVALID_ARGUMENT: API key not valid. Please pass a valid "
        "API key. (check GEMINI_API_KEY)",
    }
    assert "4321" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert len(fake_gemini.requests) == 1


def test_a_rate_limit_is_waited_out(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.script(rate_limited(0), Reply([text("after the wait")]))

    done = neo_run(fake_gemini, tmp_path / "home", "--repo", str(tmp_path), "go")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["result"] == "after the wait"
    assert len(fake_gemini.requests) == 2


def test_a_missing_key_names_the_variable(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    done = neo_run(fake_gemini, tmp_path / "home", "--repo", str(tmp_path), "go", key="")

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "neo: error: GEMINI_API_KEY is not set (export your Gemini API key)"
    ]
    assert fake_gemini.requests == []
