"""`neo run --fallback`: both real SDKs, both fakes.

The first test runs the installed console script; the others call the same
`main` in-process (the `neo_main` fixture), which checks the same exit status and output
without a process start each.
"""

from __future__ import annotations

from pathlib import Path
from subprocess import CompletedProcess

from tests.bot.cli.console import console_env, last_json, neo
from tests.fakes.anthropic_api import ErrorReply as AnthropicError
from tests.fakes.anthropic_api import FakeAnthropicAPI, text
from tests.fakes.anthropic_api import Reply as AnthropicReply
from tests.fakes.openai_responses import FakeOpenAIResponses, Reply, message
from tests.neo_cli import Neo

# The first attempt and the eight retries of the default policy.
ATTEMPTS = 9


def run_with_fallback(
    anthropic: FakeAnthropicAPI,
    openai: FakeOpenAIResponses,
    tree: Path,
    *argv: str,
    runner: Neo = neo,
) -> CompletedProcess[str]:
    """`neo run` on anthropic in `tree`, falling back to openai, with both fakes' variables."""
    env = console_env(tree / "home", anthropic.env, openai.env)
    argv = ("--fallback", "openai", "--repo", str(tree), *argv)
    return runner(env, "run", "--provider", "anthropic", *argv)


def overloaded() -> AnthropicError:
    return AnthropicError(529, "overloaded_error", "Overloaded", {"retry-after": "0"})


def test_the_fallback_finishes_the_run_when_the_first_stays_overloaded(
    fake_anthropic: FakeAnthropicAPI, fake_openai: FakeOpenAIResponses, tmp_path: Path
) -> None:
    fake_anthropic.script(*(overloaded() for _ in range(ATTEMPTS)))
    fake_openai.script(Reply([message("done by the fallback")]))

    done = run_with_fallback(
        fake_anthropic,
        fake_openai,
        tmp_path,
        "--fallback-model",
        "gpt-5",
        "--output-format",
        "json",
        "go",
    )

    assert done.returncode == 0, done.stderr
    result = last_json(done)
    assert (result["is_error"], result["result"]) == (False, "done by the fallback")
    assert len(fake_anthropic.requests) == ATTEMPTS
    assert len(fake_openai.requests) == 1
    assert fake_openai.requests[0].body["model"] == "gpt-5"
    # Priced as the model that answered: gpt-5 has a published price.
    assert result["cost_usd"] is not None
    assert result["cost_usd"] > 0


def test_text_mode_says_which_model_took_over(
    fake_anthropic: FakeAnthropicAPI,
    fake_openai: FakeOpenAIResponses,
    tmp_path: Path,
    neo_main: Neo,
) -> None:
    fake_anthropic.script(*(overloaded() for _ in range(ATTEMPTS)))
    fake_openai.script(Reply([message("done")]))

    done = run_with_fallback(fake_anthropic, fake_openai, tmp_path, "go", runner=neo_main)

    assert done.returncode == 0, done.stderr
    assert "falling back to gpt-5: anthropic 529 overloaded_error: Overloaded" in done.stderr


def test_a_first_provider_that_answers_keeps_the_run(
    fake_anthropic: FakeAnthropicAPI,
    fake_openai: FakeOpenAIResponses,
    tmp_path: Path,
    neo_main: Neo,
) -> None:
    fake_anthropic.script(overloaded(), AnthropicReply(content=(text("after one retry"),)))

    done = run_with_fallback(
        fake_anthropic, fake_openai, tmp_path, "--output-format", "json", "go", runner=neo_main
    )

    assert done.returncode == 0, done.stderr
    assert last_json(done)["result"] == "after one retry"
    assert fake_openai.requests == []


def test_a_fallback_without_its_key_fails_before_any_call(
    fake_anthropic: FakeAnthropicAPI,
    fake_openai: FakeOpenAIResponses,
    tmp_path: Path,
    neo_main: Neo,
) -> None:
    env = console_env(tmp_path / "home", fake_anthropic.env, fake_openai.env)
    del env["OPENAI_API_KEY"]
    done = neo_main(env, "run", "--fallback", "openai", "--repo", str(tmp_path), "go")

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "neo: error: OPENAI_API_KEY is not set (export your OpenAI API key)"
    )
    assert fake_anthropic.requests == []


def test_a_fallback_model_needs_a_fallback_provider(tmp_path: Path, neo_main: Neo) -> None:
    env = console_env(tmp_path / "home")
    done = neo_main(env, "run", "--fallback-model", "gpt-5", "--repo", str(tmp_path), "go")
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "neo: error: --fallback-model needs --fallback PROVIDER",
    )
