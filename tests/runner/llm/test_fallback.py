"""FallbackProvider: the second provider takes over when the first is unavailable."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.llm.errors import (
    ContextOverflow,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
)
from runner.llm.fallback import FallbackProvider, falls_back, models_of, with_fallback
from runner.llm.provider import Completed, Provider, Retrying, StreamEvent, TextDelta
from runner.llm.types import Request
from tests.fakes.scripted import ScriptedProvider, says

REQUEST = Request(messages=())
OVERLOADED = ProviderHTTPError("anthropic", 529, "overloaded_error", "Overloaded")


async def events(provider: Provider) -> list[StreamEvent]:
    return [event async for event in provider.stream(REQUEST)]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ProviderHTTPError("openai", 429, "insufficient_quota", "no credit"), True),
        (ProviderHTTPError("anthropic", 500, "api_error", "Internal"), True),
        (OVERLOADED, True),
        (ProviderConnectionError("anthropic: connection refused"), True),
        # In a stream already under way, under a 200.
        (ProviderHTTPError("anthropic", 200, "overloaded_error", "Overloaded"), True),
        (ProviderHTTPError("openai", 200, "invalid_prompt", "bad"), False),
        (ProviderHTTPError("anthropic", 401, "authentication_error", "bad key"), False),
        (ProviderHTTPError("anthropic", 400, "invalid_request_error", "bad"), False),
        (ContextOverflow("anthropic", 400, "invalid_request_error", "too long"), False),
        (ProviderError("something else"), False),
    ],
    ids=[
        "429",
        "500",
        "529",
        "no-connection",
        "in-stream-overloaded",
        "in-stream-request-error",
        "401",
        "400",
        "context-overflow",
        "other",
    ],
)
def test_which_errors_mean_the_provider_is_unavailable(error: Exception, expected: bool) -> None:
    assert falls_back(error) is expected


async def test_the_fallback_answers_once_the_first_gives_up_and_keeps_the_run() -> None:
    first = ScriptedProvider(OVERLOADED, model="claude-sonnet-5-5")
    second = ScriptedProvider(says("from the fallback"), says("still the fallback"), model="gpt-5")
    provider = FallbackProvider(first, second)
    assert (provider.name, provider.model, provider.models) == (
        "scripted",
        "claude-sonnet-5-5",
        ("claude-sonnet-5-5",),
    )

    got = await events(provider)

    assert got[0] == Retrying(0, 0.0, str(OVERLOADED), fallback="gpt-5")
    assert got[1] == TextDelta("from the fallback")
    assert isinstance(got[-1], Completed)
    assert got[-1].response.text == "from the fallback"
    assert provider.model == "gpt-5"
    assert models_of(provider) == (("claude-sonnet-5-5", "gpt-5"), str(OVERLOADED))

    # The next call goes straight to the fallback: the first is not tried again.
    again = await events(provider)
    assert [type(event) for event in again] == [TextDelta, Completed]
    assert len(first.requests) == 1
    assert len(second.requests) == 2


async def test_a_request_error_is_raised_and_the_fallback_is_not_called() -> None:
    bad_key = ProviderHTTPError("anthropic", 401, "authentication_error", "invalid x-api-key")
    second = ScriptedProvider(says("unused"))
    provider = FallbackProvider(ScriptedProvider(bad_key), second)

    with pytest.raises(ProviderHTTPError) as raised:
        await events(provider)

    assert raised.value is bad_key
    assert second.requests == []
    assert models_of(provider) == (("scripted-1",), None)


async def test_a_fallback_that_fails_too_raises_its_own_error() -> None:
    down = ProviderConnectionError("openai: connection refused")
    provider = FallbackProvider(ScriptedProvider(OVERLOADED), ScriptedProvider(down))

    with pytest.raises(ProviderConnectionError) as raised:
        await events(provider)

    assert raised.value is down


def test_both_providers_are_built_before_the_run_so_missing_keys_fail_first() -> None:
    made: list[tuple[str, str | None]] = []

    def make(name: str, model: str | None) -> Provider:
        made.append((name, model))
        if name == "openai":
            raise ConfigError("OPENAI_API_KEY is not set (export your OpenAI API key)")
        return ScriptedProvider(model=model or "scripted-1")

    plain = with_fallback(make, "anthropic", "claude-sonnet-5-5", None)
    assert models_of(plain) == (("claude-sonnet-5-5",), None)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        with_fallback(make, "anthropic", None, ("openai", "gpt-5"))
    assert made == [("anthropic", "claude-sonnet-5-5"), ("anthropic", None), ("openai", "gpt-5")]
