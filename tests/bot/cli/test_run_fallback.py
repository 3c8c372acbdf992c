"""`neo run --fallback`: the installed console script, both real SDKs, both fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.anthropic_api import ErrorReply as AnthropicError
from tests.fakes.anthropic_api import FakeAnthropicAPI, text
from tests.fakes.anthropic_api import Reply as AnthropicReply
from tests.fakes.openai_responses import FakeOpenAIResponses, Reply, message

NEO = Path(sys.executable).with_name("neo")
# The first attempt and the eight retries of the default policy.
ATTEMPTS = 9


def neo(
    fakes: tuple[FakeAnthropicAPI, FakeOpenAIResponses], home: Path, *argv: str
) -> subprocess.CompletedProcess[str]:
    anthropic, openai = fakes
    env = {**os.environ, **anthropic.env, **openai.env, "NEO_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run(
        [str(NEO), "run", "--provider", "anthropic", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def overloaded() -> AnthropicError:
    return AnthropicError(529, "overloaded_error", "Overloaded", {"retry-after": "0"})


def test_the_fallback_finishes_the_run_when_the_first_stays_overloaded(
    fake_anthropic: FakeAnthropicAPI, fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    fake_anthropic.script(*(overloaded() for _ in range(ATTEMPTS)))
    fake_openai.script(Reply([message("done by the fallback")]))

    done = neo(
        (fake_anthropic, fake_openai),
        tmp_path / "home",
        "--fallback",
        "openai",
        "--fallback-model",
        "gpt-5",
        "--repo",
        str(tmp_path),
        "--output-format",
        "json",
        "go",
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["is_error"], result["result"]) == (False, "done by the fallback")
    assert len(fake_anthropic.requests) == ATTEMPTS
    assert len(fake_openai.requests) == 1
    assert fake_openai.requests[0].body["model"] == "gpt-5"
    # Priced as the model that answered: gpt-5 has a published price.
    assert result["cost_usd"] is not None
    assert result["cost_usd"] > 0


def test_text_mode_says_which_model_took_over(
    fake_anthropic: FakeAnthropicAPI, fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    fake_anthropic.script(*(overloaded() for _ in range(ATTEMPTS)))
    fake_openai.script(Reply([message("done")]))

    done = neo(
        (fake_anthropic, fake_openai),
        tmp_path / "home",
        "--fallback",
        "openai",
        "--repo",
        str(tmp_path),
        "go",
    )

    assert done.returncode == 0, done.stderr
    assert "falling back to gpt-5: anthropic 529 overloaded_error: Overloaded" in done.stderr


def test_a_first_provider_that_answers_keeps_the_run(
    fake_anthropic: FakeAnthropicAPI, fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    fake_anthropic.script(overloaded(), AnthropicReply(content=(text("after one retry"),)))

    done = neo(
        (fake_anthropic, fake_openai),
        tmp_path / "home",
        "--fallback",
        "openai",
        "--repo",
        str(tmp_path),
        "--output-format",
        "json",
        "go",
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["result"] == "after one retry"
    assert fake_openai.requests == []


def test_a_fallback_without_its_key_fails_before_any_call(
    fake_anthropic: FakeAnthropicAPI, fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, **fake_anthropic.env, **fake_openai.env, "NEO_HOME": str(home)}
    env.pop("OPENAI_API_KEY")
    done = subprocess.run(
        [str(NEO), "run", "--fallback", "openai", "--repo", str(tmp_path), "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "neo: error: OPENAI_API_KEY is not set (export your OpenAI API key)"
    )
    assert fake_anthropic.requests == []


def test_a_fallback_model_needs_a_fallback_provider(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(NEO), "run", "--fallback-model", "gpt-5", "--repo", str(tmp_path), "go"],
        env={**os.environ, "NEO_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "neo: error: --fallback-model needs --fallback PROVIDER",
    )
