"""Pricing: each call priced as it completes, from genai-prices' published rates."""

from __future__ import annotations

import pytest

from runner.llm.pricing import PricedProvider, cost_usd, price_known, priced
from runner.llm.provider import Completed, TextDelta
from runner.llm.types import END_TURN, Request, Response, Text, Usage
from tests.fakes.scripted import ScriptedProvider

# Published rates per million tokens, priced here per 100,000: claude-sonnet-5-5
# $2 in, $10 out, $2.50 cache write ($4 for an hour), $0.10 cache read.
SONNET = "claude-sonnet-5-5"
# claude-haiku-5-5: $0.10 in; past 100,000 prompt tokens $0.50.
HAIKU = "claude-haiku-5-5"


@pytest.mark.parametrize(
    ("provider", "model", "usage", "expected"),
    [
        ("anthropic", SONNET, Usage(input_tokens=100_000), 0.2),
        ("anthropic", SONNET, Usage(output_tokens=100_000), 1.0),
        ("anthropic", SONNET, Usage(cache_creation_input_tokens=100_000), 0.25),
        ("anthropic", SONNET, Usage(cache_read_input_tokens=100_000), 0.01),
        (
            "anthropic",
            SONNET,
            Usage(cache_creation_input_tokens=100_000, cache_creation_1h_input_tokens=100_000),
            0.4,
        ),
        ("anthropic", "claude-haiku-4-5-20251001", Usage(input_tokens=100_000), 0.1),
        ("openai", "gpt-5", Usage(input_tokens=100_000), 0.125),
        ("openai", "gpt-5", Usage(cache_read_input_tokens=100_000), 0.0125),
        ("google", "gemini-2.5-flash", Usage(output_tokens=100_000), 0.25),
        ("openrouter", "anthropic/claude-sonnet-5.5", Usage(input_tokens=100_000), 0.2),
        # A Chat Completions server serving a known model is priced by its name.
        ("chat-completions", "gpt-4.1", Usage(input_tokens=100_000), 0.2),
    ],
    ids=[
        "input",
        "output",
        "cache-write",
        "cache-read",
        "an-hours-cache-write-at-2x",
        "dated-snapshot",
        "openai-input",
        "openai-cached",
        "gemini-output",
        "openrouter-vendor-name",
        "chat-completions-by-model-name",
    ],
)
def test_a_call_is_priced_at_the_published_rates(
    provider: str, model: str, usage: Usage, expected: float
) -> None:
    assert cost_usd(model, usage, provider) == pytest.approx(expected)
    assert price_known(model, provider)


def test_a_model_with_no_published_price_has_no_cost() -> None:
    assert cost_usd("llama3.1:8b", Usage(1000, 100), "chat-completions") is None
    assert not price_known("llama3.1:8b", "chat-completions")
    assert priced(Usage(1000, 100), "llama3.1:8b").cost_usd is None


def test_what_the_provider_billed_wins_over_the_published_price() -> None:
    billed = Usage(input_tokens=1_000_000, cost_usd=0.42)
    assert cost_usd(SONNET, billed, "anthropic") == 0.42
    assert priced(billed, SONNET, "anthropic") is billed


def test_calls_are_priced_one_by_one_so_a_long_run_does_not_reach_the_upper_tier() -> None:
    # Ten calls of 80,000 prompt tokens: each is under the 100,000 tier, so
    # each costs $0.008, though together they are 800,000 tokens.
    one_call = Usage(input_tokens=80_000)
    run = Usage()
    for _ in range(10):
        run = run + priced(one_call, HAIKU, "anthropic")
    assert cost_usd(HAIKU, run, "anthropic") == pytest.approx(0.08)
    # The same tokens priced as one call fall in the upper tier.
    assert cost_usd(HAIKU, Usage(input_tokens=800_000), "anthropic") == pytest.approx(0.4)
    # A single call over the tier pays its rate.
    assert cost_usd(HAIKU, Usage(input_tokens=150_000), "anthropic") == pytest.approx(0.075)


async def test_the_priced_provider_sets_each_calls_cost_and_passes_text_through() -> None:
    scripted = ScriptedProvider(
        Response((Text("hi"),), END_TURN, Usage(input_tokens=10_000, output_tokens=1_000)),
        # A call answered by another model (a fallback) is priced as that model.
        Response((Text("again"),), END_TURN, Usage(input_tokens=10_000), model="gpt-5"),
        model=SONNET,
    )
    provider = PricedProvider(scripted)
    request = Request(messages=())

    first = [event async for event in provider.stream(request)]
    assert first[0] == TextDelta("hi")
    assert isinstance(first[-1], Completed)
    assert first[-1].response.usage.cost_usd == pytest.approx(0.03)
    assert first[-1].response.text == "hi"

    second = [event async for event in provider.stream(request)]
    assert isinstance(second[-1], Completed)
    assert second[-1].response.usage.cost_usd == pytest.approx(0.0125)
    assert (provider.name, provider.model, provider.inner) == ("scripted", SONNET, scripted)
