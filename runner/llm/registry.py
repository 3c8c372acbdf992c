"""Providers by name, as `neo run --provider` and repository configs name them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from runner.errors import ConfigError
from runner.llm.pricing import PricedProvider
from runner.llm.provider import Provider

__all__ = [
    "CHATGPT_SIGN_IN",
    "DEFAULT_PROVIDER",
    "KEY_VARIABLES",
    "OPENAI_AUTHS",
    "PROVIDERS",
    "make_provider",
    "missing_credentials",
]

# Every name the CLI contract accepts; those without an adapter yet are
# refused with a clear error rather than silently swapped for another.
PROVIDERS = ("anthropic", "openai", "chat-completions", "openrouter", "google")
DEFAULT_PROVIDER = "anthropic"
# How the openai provider signs in: an API key, or a ChatGPT subscription
# (`neo login chatgpt`).
OPENAI_AUTHS = ("api_key", "subscription")
# The variable each keyed provider reads its API key from, and whose key it is.
KEY_VARIABLES = {
    "anthropic": ("ANTHROPIC_API_KEY", "Anthropic"),
    "openai": ("OPENAI_API_KEY", "OpenAI"),
    "openrouter": ("OPENROUTER_API_KEY", "OpenRouter"),
    "google": ("GEMINI_API_KEY", "Gemini"),
}
# What a subscription run lacks without `neo login chatgpt` on its host.
CHATGPT_SIGN_IN = "stored ChatGPT credentials (neo login chatgpt)"


def missing_credentials(
    name: str, env: Mapping[str, str], *, openai_auth: str = "api_key"
) -> str | None:
    """What provider `name` lacks in `env` to sign in: the variable to set, or
    the ChatGPT sign-in; None when it has what it needs (or is unknown, which
    `make_provider` refuses on its own).
    """
    if name == "openai" and openai_auth == "subscription":
        from runner.auth.storage import credentials_path

        home = env.get("NEO_HOME")
        root = Path(home).expanduser() if home else Path.home() / ".neo"
        return None if credentials_path(root).is_file() else CHATGPT_SIGN_IN
    if name == "google":
        # The SDK takes either name; GEMINI_API_KEY is the one its docs give.
        return None if env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") else "GEMINI_API_KEY"
    if name == "chat-completions":
        if env.get("OPENAI_API_KEY"):
            return None
        from runner.llm.chat_completions import CHAT_COMPLETIONS, is_local_url

        # A local server may need no key, as the adapter decides from the address.
        url = env.get("OPENAI_BASE_URL") or CHAT_COMPLETIONS.default_base_url
        return None if is_local_url(url) else "OPENAI_API_KEY"
    if name in KEY_VARIABLES:
        variable = KEY_VARIABLES[name][0]
        return None if env.get(variable) else variable
    return None


def make_provider(name: str, model: str | None = None, *, openai_auth: str = "api_key") -> Provider:
    """Build the named provider from its SDK's environment variables; each
    call it completes carries its cost.

    Raises ConfigError, naming the variable or flag to fix, when the provider
    is unknown or its credentials are missing.
    """
    return PricedProvider(_adapter(name, model, openai_auth))


def _adapter(name: str, model: str | None, openai_auth: str) -> Provider:
    if name == "anthropic":
        _require_key(name)
        # The SDK takes seconds to import; only runs that use it pay for it.
        from runner.llm.anthropic import DEFAULT_MODEL, AnthropicProvider

        return AnthropicProvider(model or DEFAULT_MODEL)
    if name == "openai" and openai_auth == "subscription":
        from runner.home import neo_home
        from runner.llm.chatgpt import chatgpt_provider

        return chatgpt_provider(model, home=neo_home())
    if name == "openai":
        if openai_auth not in OPENAI_AUTHS:
            raise ConfigError(f"unknown openai_auth {openai_auth!r} ({', '.join(OPENAI_AUTHS)})")
        _require_key(name)
        from runner.llm import openai_responses

        return openai_responses.OpenAIResponsesProvider(model or openai_responses.DEFAULT_MODEL)
    if name == "chat-completions":
        return _chat_completions(model)
    if name == "openrouter":
        return _openrouter(model)
    if name == "google":
        return _google(model)
    raise ConfigError(f"unknown provider {name!r} (--provider: {', '.join(PROVIDERS)})")


def _require_key(name: str) -> None:
    variable = missing_credentials(name, os.environ)
    if variable is not None:
        raise ConfigError(f"{variable} is not set (export your {KEY_VARIABLES[name][1]} API key)")


def _chat_completions(model: str | None) -> Provider:
    from runner.llm.chat_completions import CHAT_COMPLETIONS, ChatCompletionsProvider

    if not model:
        raise ConfigError(
            "provider 'chat-completions' needs a model: pass --model (for example "
            "--model gpt-4.1, or the name your server serves)"
        )
    # A local server may need no key: the adapter decides from the address.
    return ChatCompletionsProvider(
        model,
        dialect=CHAT_COMPLETIONS,
        api_key=os.environ.get("OPENAI_API_KEY") or None,
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
    )


def _openrouter(model: str | None) -> Provider:
    _require_key("openrouter")
    from runner.llm.chat_completions import ChatCompletionsProvider
    from runner.llm.openrouter import DEFAULT_MODEL, OPENROUTER

    return ChatCompletionsProvider(
        model or DEFAULT_MODEL,
        dialect=OPENROUTER,
        api_key=os.environ["OPENROUTER_API_KEY"],
        base_url=os.environ.get("OPENROUTER_BASE_URL") or None,
    )


def _google(model: str | None) -> Provider:
    # The SDK prefers GOOGLE_API_KEY when both are set; errors name the one in use.
    _require_key("google")
    variable = next(v for v in ("GOOGLE_API_KEY", "GEMINI_API_KEY") if os.environ.get(v))
    from runner.llm.google import DEFAULT_MODEL, GoogleProvider

    return GoogleProvider(model or DEFAULT_MODEL, key_variable=variable)
