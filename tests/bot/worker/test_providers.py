"""Which providers a service offers, and the one comment for a config that asks for another."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.config import RepoConfig
from bot.worker.providers import Unavailable, offered, unavailable, unavailable_text
from runner.auth.credentials import credentials_from_tokens
from runner.auth.storage import save_credentials
from tests.fakes.chatgpt_auth import FakeChatGPTAuth

# No ChatGPT sign-in stored, whatever the home of whoever runs the tests holds.
ANTHROPIC_ONLY = {"ANTHROPIC_API_KEY": "sk-ant-secret-1", "NEO_HOME": "/nonexistent/neo-home"}
FILE = {"provider": "from `.github/neo.yml`", "fallback": "from `.github/neo.yml`"}


def test_a_service_offers_the_providers_whose_keys_it_has() -> None:
    assert offered(ANTHROPIC_ONLY) == ("anthropic",)
    env = {"OPENAI_API_KEY": "sk-2", "GEMINI_API_KEY": "AIza-3", "NEO_HOME": "/nonexistent"}
    # The key for OpenAI serves its Chat Completions too.
    assert offered(env) == ("openai", "chat-completions", "google")
    assert offered({"NEO_HOME": "/nonexistent"}) == ()


def test_a_stored_chatgpt_sign_in_offers_openai_by_subscription(tmp_path: Path) -> None:
    with FakeChatGPTAuth() as auth:
        save_credentials(tmp_path, credentials_from_tokens(auth.issue(), now=time.time()))
    env = {**ANTHROPIC_ONLY, "NEO_HOME": str(tmp_path)}
    assert offered(env) == ("anthropic", "openai (with openai_auth: subscription)")
    config = RepoConfig(provider="openai", openai_auth="subscription")
    assert unavailable(config, env, source=FILE) is None


def test_an_offered_provider_and_fallback_pass() -> None:
    env = {**ANTHROPIC_ONLY, "OPENAI_API_KEY": "sk-2"}
    config = RepoConfig.model_validate(
        {"provider": "openai", "fallback": {"provider": "anthropic"}}
    )
    assert unavailable(config, env, source=FILE) is None
    assert unavailable(RepoConfig(), env, source={}) is None


def test_a_provider_without_its_key_is_one_line_naming_the_variable() -> None:
    problem = unavailable(RepoConfig(provider="openai"), ANTHROPIC_ONLY, source=FILE)

    assert problem == Unavailable(
        "provider", "openai", "api_key", "OPENAI_API_KEY", "from `.github/neo.yml`", ("anthropic",)
    )
    assert unavailable_text(problem) == (
        "Neo did not run: the provider `openai` (from `.github/neo.yml`) is not offered by"
        " this Neo service: it has no `OPENAI_API_KEY`. Ask the operator to set it, or"
        " choose one of: anthropic."
    )


def test_an_unavailable_fallback_is_named_as_the_fallback() -> None:
    config = RepoConfig.model_validate(
        {"provider": "anthropic", "fallback": {"provider": "google", "model": "gemini-2.5-pro"}}
    )
    problem = unavailable(config, ANTHROPIC_ONLY, source=FILE)

    assert problem is not None
    assert (problem.role, problem.missing) == ("fallback", "GEMINI_API_KEY")
    text = unavailable_text(problem)
    assert text.startswith("Neo did not run: the fallback provider `google` (from ")
    assert "it has no `GEMINI_API_KEY`" in text


def test_the_default_provider_is_said_to_be_the_default() -> None:
    problem = unavailable(
        RepoConfig(), {"OPENAI_API_KEY": "sk-2", "NEO_HOME": "/nonexistent"}, source={}
    )

    assert problem is not None
    text = unavailable_text(problem)
    assert "the provider `anthropic` (Neo's default)" in text
    assert "no `ANTHROPIC_API_KEY`" in text
    assert text.endswith("or choose one of: openai, chat-completions.")


def test_no_provider_at_all_says_so(tmp_path: Path) -> None:
    problem = unavailable(RepoConfig(), {"NEO_HOME": str(tmp_path)}, source={})

    assert problem is not None
    assert unavailable_text(problem).endswith(
        "Ask the operator to set it; it offers no provider yet."
    )


def test_a_subscription_without_a_sign_in_asks_for_one(tmp_path: Path) -> None:
    config = RepoConfig(provider="openai", openai_auth="subscription")
    env = {"OPENAI_API_KEY": "sk-2", "NEO_HOME": str(tmp_path)}
    problem = unavailable(config, env, source=FILE)

    assert problem is not None
    text = unavailable_text(problem)
    assert "the provider `openai` with `openai_auth: subscription` (from " in text
    assert "it has no stored ChatGPT sign-in" in text
    assert "`neo login chatgpt`" in text


@pytest.mark.parametrize("env", [ANTHROPIC_ONLY, {"OPENAI_API_KEY": "sk-secret-22"}])
def test_no_key_reaches_the_text(env: dict[str, str]) -> None:
    problem = unavailable(RepoConfig(provider="google"), env, source=FILE)

    assert problem is not None
    text = unavailable_text(problem)
    assert all(value not in text for value in env.values())
    assert "\n" not in text
