"""The ledger: worst cases reserved, output lowered to what is left, shares and the last word."""

from __future__ import annotations

import pytest

from runner.agent import MaxCost
from runner.errors import ConfigError
from runner.llm.price_book import Price, PriceBook
from runner.llm.types import Usage
from runner.spend import MIN_OUTPUT_TOKENS, Ledger, Quote

# $1 per million prompt tokens, $10 per million output tokens: a token of
# output is a hundred thousandth of a dollar.
FLAT = PriceBook(operator={"flat": Price(input=1.0, output=10.0)})


def quote(prompt: int, model: str = "flat") -> Quote:
    return Quote("test", model, prompt)


def test_without_a_limit_every_call_is_granted_and_counted() -> None:
    ledger = Ledger(None, FLAT)

    grant = ledger.reserve(ledger.main, [quote(10**9)], 32_000)
    cost = ledger.settle(grant, quote(0), Usage(input_tokens=1_000_000))

    assert grant.max_tokens == 32_000
    assert (cost, ledger.spent, ledger.calls) == (1.0, 1.0, 1)


def test_a_call_that_fits_gets_what_it_asked_for_and_its_worst_case_is_reserved() -> None:
    ledger = Ledger(10.0, FLAT)
    ledger.main.keeps_wrap_up = False

    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)

    assert grant.max_tokens == 32_000
    assert grant.amount == pytest.approx(0.1 + 0.32)
    assert ledger.left == pytest.approx(10.0 - 0.42)


def test_the_output_asked_for_is_lowered_to_what_is_left() -> None:
    ledger = Ledger(0.15, FLAT)
    ledger.main.keeps_wrap_up = False

    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)

    # $0.10 of prompt leaves $0.05: 5,000 tokens of output.
    assert grant.max_tokens == 5_000
    assert grant.amount <= 0.15


def test_a_call_that_cannot_write_the_least_useful_answer_is_refused() -> None:
    ledger = Ledger(0.11, FLAT)
    ledger.main.keeps_wrap_up = False

    with pytest.raises(MaxCost) as refused:
        ledger.reserve(ledger.main, [quote(100_000)], 32_000)

    assert str(refused.value) == (
        "$0.00 of the $0.11 cost limit is spent: the next model call would cost up to $0.11"
        " (a prompt of up to 100,000 tokens), more than the $0.11 left"
    )
    assert (ledger.reserved, ledger.calls) == (0.0, 0)


def test_what_the_call_cost_settles_its_reservation() -> None:
    ledger = Ledger(1.0, FLAT)

    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)
    ledger.settle(grant, quote(0), Usage(input_tokens=50_000, output_tokens=1_000))

    assert ledger.spent == pytest.approx(0.06)
    assert ledger.reserved == 0.0
    assert ledger.calls == 1


def test_a_failed_call_releases_its_reservation_and_is_not_counted() -> None:
    ledger = Ledger(1.0, FLAT)

    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)
    ledger.release(grant)
    ledger.release(grant)

    assert (ledger.spent, ledger.reserved, ledger.calls) == (0.0, 0.0, 0)


def test_calls_in_flight_together_cannot_pass_the_limit() -> None:
    ledger = Ledger(1.0, FLAT)
    children = ledger.share("the subagents' share", None)

    grants = [ledger.reserve(children, [quote(100_000)], 32_000) for _ in range(3)]
    with pytest.raises(MaxCost):
        ledger.reserve(children, [quote(100_000)], 32_000)

    # $0.42 each, the third lowered to the $0.16 left; a fourth cannot write anything.
    assert [grant.max_tokens for grant in grants] == [32_000, 32_000, 6_000]
    assert sum(grant.amount for grant in grants) == pytest.approx(1.0)


def test_a_share_caps_its_calls_within_the_limit() -> None:
    ledger = Ledger(1.0, FLAT)
    children = ledger.share("the subagents' share", 0.25)

    grant = ledger.reserve(children, [quote(100_000)], 32_000)
    assert grant.max_tokens == 15_000  # $0.25 less $0.10 of prompt
    ledger.settle(grant, quote(0), Usage(input_tokens=100_000, output_tokens=14_000))

    with pytest.raises(MaxCost) as refused:
        ledger.reserve(children, [quote(100_000)], 32_000)
    assert str(refused.value).startswith(
        "the subagents' share of the cost limit is spent ($0.24 of $0.25;"
    )
    assert str(refused.value).endswith("continue with your own tools")
    # The run's own calls go on with what the limit has left.
    ledger.main.keeps_wrap_up = False
    assert ledger.reserve(ledger.main, [quote(100_000)], 32_000).max_tokens == 32_000


def test_the_runs_calls_keep_back_what_its_last_word_would_cost() -> None:
    ledger = Ledger(1.0, FLAT)

    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)

    # The last word after it: the prompt, the answer and the tool results
    # (8,192 tokens) read, and 4,096 tokens written.
    kept = (100_000 + grant.max_tokens + 8_192) * 1e-6 + 4_096 * 1e-5
    assert ledger.held == pytest.approx(kept)
    assert grant.amount + ledger.held <= 1.0
    ledger.settle(grant, quote(0), Usage(input_tokens=100_000, output_tokens=30_000))
    # Another account's calls cannot take what is kept.
    children = ledger.share("the subagents' share", None)
    left = 1.0 - ledger.spent - ledger.held
    with pytest.raises(MaxCost):
        ledger.reserve(children, [quote(int(left * 1_000_000))], 32_000)


def test_the_last_word_may_spend_what_was_kept_for_it() -> None:
    ledger = Ledger(0.5, FLAT)
    grant = ledger.reserve(ledger.main, [quote(100_000)], 32_000)
    ledger.settle(grant, quote(0), Usage(input_tokens=100_000, output_tokens=grant.max_tokens))
    with pytest.raises(MaxCost):
        ledger.reserve(ledger.main, [quote(150_000)], 32_000)

    ledger.wrap_up()
    last = ledger.reserve(ledger.main, [quote(150_000)], 32_000)

    assert last.max_tokens >= MIN_OUTPUT_TOKENS
    assert ledger.spent + last.amount <= 0.5


def test_a_call_that_two_models_may_answer_is_reserved_at_the_dearer() -> None:
    book = PriceBook(
        operator={"cheap": Price(input=1.0, output=10.0), "dear": Price(input=2.0, output=20.0)}
    )
    ledger = Ledger(10.0, book)
    ledger.main.keeps_wrap_up = False

    grant = ledger.reserve(ledger.main, [quote(100_000, "cheap"), quote(100_000, "dear")], 1_000)

    assert grant.amount == pytest.approx(0.2 + 0.02)


def test_with_a_limit_a_model_without_a_price_is_refused_naming_it() -> None:
    ledger = Ledger(1.0, PriceBook(), where_prices_go="under `prices:` in .github/neo.yml")

    with pytest.raises(ConfigError) as refused:
        ledger.require_prices([("anthropic", "claude-sonnet-5-5"), ("ollama", "llama3.1:8b")])
    with pytest.raises(ConfigError):
        ledger.reserve(ledger.main, [quote(10, "llama3.1:8b")], 100)

    assert str(refused.value) == (
        "model 'llama3.1:8b' has no known price, so the $1.00 cost limit cannot hold: give"
        " its price per million tokens under `prices:` in .github/neo.yml, e.g."
        ' [{"model": "llama3.1:8b", "input": 3, "output": 15}]'
    )


def test_without_a_limit_a_model_without_a_price_runs_at_no_cost() -> None:
    ledger = Ledger(None, PriceBook())
    ledger.require_prices([("ollama", "llama3.1:8b")])

    grant = ledger.reserve(ledger.main, [quote(10, "llama3.1:8b")], 100)
    cost = ledger.settle(grant, quote(0, "llama3.1:8b"), Usage(1_000, 100))

    assert (cost, ledger.spent, ledger.calls) == (None, 0.0, 1)
    assert ledger.unpriced == {"llama3.1:8b": 1}  # named where the cost is shown


def test_an_answer_from_a_model_without_a_price_costs_what_was_reserved() -> None:
    ledger = Ledger(1.0, FLAT)
    grant = ledger.reserve(ledger.main, [quote(1_000)], 1_000)

    cost = ledger.settle(grant, quote(0, "renamed-model"), Usage(1_000, 100))

    assert cost == grant.amount


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf"), float("nan")])
def test_a_limit_must_be_a_positive_amount(limit: float) -> None:
    with pytest.raises(ConfigError, match="positive number of US dollars"):
        Ledger(limit)
