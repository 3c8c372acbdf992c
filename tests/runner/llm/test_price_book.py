"""The price book: whose price wins, and the most a call can cost."""

from __future__ import annotations

import pytest

from runner.llm.price_book import Price, PriceBook, Rates
from runner.llm.pricing import cost_usd
from runner.llm.types import Usage

SONNET = "claude-sonnet-5-5"  # $2 in, $10 out, $2.50 / $4 cache writes, $0.10 read
HAIKU = "claude-haiku-5-5"  # $0.10 in, $0.50 out, $0.125 / $0.20 cache writes; x5 past 100k
LOCAL = "llama3.1:8b"  # no published price


def test_a_published_model_is_priced_without_being_given_a_price() -> None:
    book = PriceBook()
    usage = Usage(input_tokens=100_000, output_tokens=10_000)

    assert book.known(SONNET, "anthropic")
    assert book.cost(SONNET, "anthropic", usage) == pytest.approx(0.2 + 0.1)


def test_the_operators_price_wins_over_the_published_one() -> None:
    book = PriceBook(operator={SONNET: Price(input=1.0, output=2.0)})
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cost_usd=99.0)

    # Even over a cost the usage carries (priced at the published rates as it completed).
    assert book.cost(SONNET, "anthropic", usage) == pytest.approx(3.0)


def test_the_configs_price_applies_only_to_a_model_nobody_else_prices() -> None:
    book = PriceBook(config={SONNET: Price(0.0, 0.0), LOCAL: Price(input=0.5, output=1.5)})
    usage = Usage(input_tokens=100_000, output_tokens=100_000)

    assert book.cost(LOCAL, "chat-completions", usage) == pytest.approx(0.05 + 0.15)
    # A repository cannot make a published model cheaper.
    assert book.cost(SONNET, "anthropic", usage) == pytest.approx(0.2 + 1.0)


def test_a_model_nobody_prices_has_no_cost_and_is_named_as_unpriced() -> None:
    book = PriceBook()

    assert book.cost(LOCAL, "chat-completions", Usage(1000, 100)) is None
    assert book.unpriced([("anthropic", SONNET), ("x", LOCAL), ("y", LOCAL)]) == (LOCAL,)


def test_a_cost_the_provider_billed_stands() -> None:
    book = PriceBook()
    billed = Usage(input_tokens=1_000_000, cost_usd=0.42)

    assert book.cost("anthropic/claude-sonnet-5.5", "openrouter", billed) == 0.42


def test_cache_rates_default_to_the_input_rate() -> None:
    rates = Rates.flat(Price(input=2.0, output=4.0))
    usage = Usage(cache_creation_input_tokens=500_000, cache_read_input_tokens=500_000)

    assert rates.cost(usage) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("prompt", "output", "expected"),
    [
        # Every prompt token at the one-hour cache write's $0.20, output at $0.50.
        (100_000, 10_000, 0.02 + 0.005),
        # Past 100,000 prompt tokens every rate is five times as much ($1 write, $2.50 out).
        (100_001, 10_000, 100_001 * 1e-6 + 0.025),
        (0, 32_000, 0.016),
    ],
    ids=["below-the-tier", "past-the-tier", "output-only"],
)
def test_the_worst_case_bills_every_prompt_token_at_the_dearest_rate(
    prompt: int, output: int, expected: float
) -> None:
    rates = PriceBook().rates(HAIKU, "anthropic")
    assert rates is not None

    assert rates.worst(prompt, output) == pytest.approx(expected)


@pytest.mark.parametrize(
    "usage",
    [
        Usage(input_tokens=150_000, output_tokens=20_000),
        Usage(cache_creation_input_tokens=150_000, output_tokens=20_000),
        Usage(input_tokens=10, cache_creation_input_tokens=190_000, cache_read_input_tokens=10_000),
        Usage(input_tokens=5_000, cache_read_input_tokens=200_000, output_tokens=20_000),
    ],
    ids=["plain", "all-written", "written-and-read", "past-the-tier"],
)
@pytest.mark.parametrize(
    ("model", "provider"),
    [
        (SONNET, "anthropic"),
        (HAIKU, "anthropic"),
        ("gpt-5", "openai"),
        ("gemini-2.5-pro", "google"),
    ],
    ids=["sonnet", "haiku-tiered", "gpt-5", "gemini-tiered"],
)
def test_no_call_within_its_tokens_costs_more_than_its_worst_case(
    model: str, provider: str, usage: Usage
) -> None:
    rates = PriceBook().rates(model, provider)
    assert rates is not None
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens

    billed = cost_usd(model, usage, provider)

    assert billed is not None
    assert billed <= rates.worst(prompt, usage.output_tokens) + 1e-9


def test_a_price_must_be_a_finite_amount_not_below_zero() -> None:
    with pytest.raises(ValueError, match="input"):
        Price(input=-1.0, output=1.0)
    with pytest.raises(ValueError, match="cache_write"):
        Price(input=1.0, output=1.0, cache_write=float("nan"))
