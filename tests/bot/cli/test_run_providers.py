"""`neo run` on each provider that has its own wire: the installed console
script and the real SDK against that provider's fake, held to the same
promises (a bad key is one line, a rate limit is waited out, a missing key
names its variable). A table row says how each one words them. The bad-key
rows run the console script; the others call the same `main` in-process
(the `neo_main` fixture: the same exit status and output, no process start each)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from tests.bot.cli.console import console_env, last_json, neo
from tests.fakes import gemini_api as gem
from tests.fakes import openai_responses as oai
from tests.neo_cli import Neo


@dataclass(frozen=True, slots=True)
class Case:
    provider: str
    # The conftest fixture serving this provider's fake.
    fixture: str
    key_variable: str
    # How the missing-key line names the key.
    vendor: str
    bad_key: str
    bad_key_line: str
    # A 429 that asks for no wait, in the provider's own way.
    rate_limit: object
    reply: object


CASES = [
    Case(
        "google",
        "fake_gemini",
        "GEMINI_API_KEY",
        "Gemini",
        "AIzaSyBadKeyForTheTest-4321",
        "google 400 INVALID_ARGUMENT: API key not valid. Please pass a valid "
        "API key. (check GEMINI_API_KEY)",
        gem.rate_limited(0),
        gem.Reply([gem.text("after the wait")]),
    ),
    Case(
        "openai",
        "fake_openai",
        "OPENAI_API_KEY",
        "OpenAI",
        "sk-bad-4321",
        "openai 401 invalid_api_key: Incorrect API key provided: sk-…. "
        "You can find your API key at https://platform.openai.com/account/api-keys. "
        "(check OPENAI_API_KEY)",
        oai.ErrorReply(429, "rate_limit_exceeded", "Slow down.", "tokens", {"retry-after": "0"}),
        oai.Reply([oai.message("after the wait")]),
    ),
]


@pytest.fixture(params=CASES, ids=lambda case: case.provider)
def case(request: pytest.FixtureRequest) -> Case:
    assert isinstance(request.param, Case)
    return request.param


@pytest.fixture
def fake(case: Case, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(case.fixture)


def run(
    case: Case, fake: Any, tree: Path, key: str | None = None, *, runner: Neo = neo
) -> CompletedProcess[str]:
    env = console_env(tree / "home", fake.env, unset=("ANTHROPIC_API_KEY", "GOOGLE_API_KEY"))
    if key is not None:
        env[case.key_variable] = key
    argv = ["--provider", case.provider, "--output-format", "json", "--repo", str(tree)]
    return runner(env, "run", *argv, "go")


def test_a_bad_key_is_one_line_and_exit_1(case: Case, fake: Any, tmp_path: Path) -> None:
    fake.script(case.reply)

    done = run(case, fake, tmp_path, key=case.bad_key)

    assert done.returncode == 1
    result = last_json(done)
    assert result["error"] == {"type": "provider_http_error", "message": case.bad_key_line}
    assert "4321" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert len(fake.requests) == 1


def test_a_rate_limit_is_waited_out(case: Case, fake: Any, tmp_path: Path, neo_main: Neo) -> None:
    fake.script(case.rate_limit, case.reply)

    done = run(case, fake, tmp_path, runner=neo_main)

    assert done.returncode == 0, done.stderr
    assert last_json(done)["result"] == "after the wait"
    assert len(fake.requests) == 2


def test_a_missing_key_names_the_variable(
    case: Case, fake: Any, tmp_path: Path, neo_main: Neo
) -> None:
    done = run(case, fake, tmp_path, key="", runner=neo_main)

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"neo: error: {case.key_variable} is not set (export your {case.vendor} API key)"
    ]
    assert fake.requests == []
