"""Providers by name, as `neo run --provider` and repository configs name them."""

from __future__ import annotations

import os

from runner.errors import ConfigError
from runner.llm.pricing import PricedProvider
from runner.llm.provider import Provider

# Every name the CLI contract accepts; those without an adapter yet are
# refused with a clear error rather than silently swapped for another.
PROVIDERS = ("anthropic", "openai", "chat-completions", "openrouter", "google")
DEFAULT_PROVIDER = "anthropic"
# How the openai provider signs in: an API key, or a ChatGPT subscription
# (`neo login chatgpt`).
OPENAI_AUTHS = ("api_key", "subscription")


def make_provider(name: str, model: str | None = None, *, openai_auth: str = "api_key") -> Provider:
    """Build the named provider from its SDK's environment variables; each
    call it completes carries its cost.

    Raises ConfigError, naming the variable or flag to fix, when the provider
    is unknown or its credentials are missing.
    """
    return PricedProvider(_adapter(name, model, openai_auth))


def _adapter(name: str, model: str | None, openai_auth: str) -> Provider:
    if name == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("ANTHROPIC_API_KEY is not set (export your Anthropic API key)")
        # The SDK takes seconds to import; only runs that use it pay for it.
        from runner.llm.anthropic import DEFAULT_MODEL, AnthropicProvider

        return AnthropicProvider(model or DEFAULT_MODEL)
    if name == "openai" and openai_auth == "subscription":
        from runner.llm.chatgpt import chatgpt_provider
        from runner.session import neo_home

        return chatgpt_provider(model, home=neo_home())
    if name == "openai":
        if openai_auth not in OPENAI_AUTHS:
            raise ConfigError(f"unknown openai_auth {openai_auth!r} ({', '.join(OPENAI_AUTHS)})")
        if not os.environ.get("OPENAI_API_KEY"):
            raise ConfigError("OPENAI_API_KEY is not set (export your OpenAI API key)")
        from runner.llm import openai_responses

        return openai_responses.OpenAIResponsesProvider(model or openai_responses.DEFAULT_MODEL)
    if name == "chat-completions":
        return _chat_completions(model)
    if name == "openrouter":
        return _openrouter(model)
    if name == "google":
        return _google(model)
    raise ConfigError(f"unknown provider {name!r} (--provider: {', '.join(PROVIDERS)})")


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
    if not os.environ.get("OPENROUTER_API_KEY"):
        raise ConfigError("OPENROUTER_API_KEY is not set (export your OpenRouter API key)")
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
    variable = next((v for v in ("GOOGLE_API_KEY", "GEMINI_API_KEY") if os.environ.get(v)), None)
    if variable is None:
        raise ConfigError("GEMINI_API_KEY is not set (export your Gemini API key)")
    from runner.llm.google import DEFAULT_MODEL, GoogleProvider

    return GoogleProvider(model or DEFAULT_MODEL, key_variable=variable)
