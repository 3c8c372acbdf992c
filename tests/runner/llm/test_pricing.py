"""Pricing: each call priced as it completes, from genai-prices' published rates."""

from __future__ import annotations

import pytest

from runner.llm.pricing import PricedProvider, cost_usd, price_known, priced
from runner.llm.provider import Completed, TextDelta
from runner.llm.types import END_TURN, Request, Response, Text, Usage
from tests.fakes.scripted import ScriptedProvider

# Published rates per million tokens, priced here per 100,000: claude-sonnet-4-5
# $3 in, $15 out, $3.75 cache write, $0.30 cache read; past 200,000 prompt
# tokens $6 in, $22.50 out.
SONNET = "claude-sonnet-4-5"


@pytest.mark.parametrize(
    ("provider", "model", "usage", "expected"),
    [
        ("anthropic", SONNET, Usage(input_tokens=100_000), 0.3),
        ("anthropic", SONNET, Usage(output_tokens=100_000), 1.5),
        ("anthropic", SONNET, Usage(cache_creation_input_tokens=100_000), 0.375),
        ("anthropic", SONNET, Usage(cache_read_input_tokens=100_000), 0.03),
        (
            "anthropic",
            SONNET,
            Usage(cache_creation_input_tokens=100_000, cache_creation_1h_input_tokens=100_000),
            0.6,
        ),
        ("anthropic", "claude-sonnet-4-5-20250929", Usage(input_tokens=100_000), 0.3),
        ("openai", "gpt-5", Usage(input_tokens=100_000), 0.125),
        ("openai", "gpt-5", Usage(cache_read_input_tokens=100_000), 0.0125),
        ("google", "gemini-2.5-flash", Usage(output_tokens=100_000), 0.25),
        ("openrouter", "anthropic/claude-sonnet-4.5", Usage(input_tokens=100_000), 0.3),
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
    # Ten calls of 150,000 prompt tokens: each is under the 200,000 tier, so
    # each costs $0.45, though together they are 1.5 million tokens.
    one_call = Usage(input_tokens=150_000)
    run = Usage()
    for _ in range(10):
        run = run + priced(one_call, SONNET, "anthropic")
    assert cost_usd(SONNET, run, "anthropic") == pytest.approx(4.5)
    # The same tokens priced as one call fall in the upper tier.
    assert cost_usd(SONNET, Usage(input_tokens=1_500_000), "anthropic") == pytest.approx(9.0)
    # A single call over the tier pays its rate.
    assert cost_usd(SONNET, Usage(input_tokens=250_000), "anthropic") == pytest.approx(1.5)


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
    assert first[-1].response.usage.cost_usd == pytest.approx(0.045)
    assert first[-1].response.text == "hi"

    second = [event async for event in provider.stream(request)]
    assert isinstance(second[-1], Completed)
    assert second[-1].response.usage.cost_usd == pytest.approx(0.0125)
    assert (provider.name, provider.model, provider.inner) == ("scripted", SONNET, scripted)
