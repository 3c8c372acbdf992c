"""Which providers an environment can sign in to, and make_provider's one line for the rest."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runner.auth.credentials import credentials_from_tokens
from runner.auth.storage import save_credentials
from runner.errors import ConfigError
from runner.llm.registry import CHATGPT_SIGN_IN, PROVIDERS, make_provider, missing_credentials
from tests.fakes.chatgpt_auth import FakeChatGPTAuth

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-1",
    "OPENAI_API_KEY": "sk-2",
    "OPENROUTER_API_KEY": "sk-or-3",
    "GEMINI_API_KEY": "AIza-4",
}


@pytest.mark.parametrize(
    ("name", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("google", "GEMINI_API_KEY"),
        ("chat-completions", "OPENAI_API_KEY"),
    ],
)
def test_each_provider_names_the_variable_it_lacks(name: str, variable: str) -> None:
    assert missing_credentials(name, {}) == variable
    assert missing_credentials(name, KEYS) is None


def test_every_provider_is_offered_with_every_key() -> None:
    assert [p for p in PROVIDERS if missing_credentials(p, KEYS)] == []


def test_either_google_variable_will_do() -> None:
    assert missing_credentials("google", {"GOOGLE_API_KEY": "AIza-5"}) is None


@pytest.mark.parametrize(
    ("url", "missing"),
    [
        ("http://localhost:11434/v1", None),
        ("http://127.0.0.1:8000/v1", None),
        ("https://api.example.com/v1", "OPENAI_API_KEY"),
    ],
)
def test_chat_completions_needs_a_key_only_away_from_a_local_server(
    url: str, missing: str | None
) -> None:
    assert missing_credentials("chat-completions", {"OPENAI_BASE_URL": url}) == missing


def test_an_unknown_provider_is_left_to_make_provider() -> None:
    assert missing_credentials("mistral", {}) is None
    with pytest.raises(ConfigError, match=r"^unknown provider 'mistral'"):
        make_provider("mistral")


def test_the_subscription_needs_the_sign_in_stored_under_neo_home(tmp_path: Path) -> None:
    env = {"NEO_HOME": str(tmp_path), "OPENAI_API_KEY": "sk-2"}
    # An API key is no sign-in.
    assert missing_credentials("openai", env, openai_auth="subscription") == CHATGPT_SIGN_IN
    with FakeChatGPTAuth() as auth:
        save_credentials(tmp_path, credentials_from_tokens(auth.issue(), now=time.time()))
    assert missing_credentials("openai", env, openai_auth="subscription") is None
    assert missing_credentials("openai", {"NEO_HOME": str(tmp_path)}) == "OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("anthropic", "ANTHROPIC_API_KEY is not set (export your Anthropic API key)"),
        ("openai", "OPENAI_API_KEY is not set (export your OpenAI API key)"),
        ("openrouter", "OPENROUTER_API_KEY is not set (export your OpenRouter API key)"),
        ("google", "GEMINI_API_KEY is not set (export your Gemini API key)"),
    ],
)
def test_make_provider_refuses_a_missing_key_in_one_line(
    name: str, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in (*KEYS, "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigError) as caught:
        make_provider(name)
    assert str(caught.value) == line
