"""What a run cost, from published per-token prices."""

from __future__ import annotations

from dataclasses import dataclass

from runner.llm.types import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


# Model names are matched by prefix, longest first, so dated snapshots and
# aliases share a row.
PRICES: dict[str, Price] = {
    "claude-fable-5": Price(10.0, 50.0, 12.50, 1.00),
    "claude-opus-5-5": Price(4.0, 20.0, 5.00, 0.40),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-5": Price(2.0, 10.0, 2.50, 0.20),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-7": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-8": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4": Price(1.0, 5.0, 1.25, 0.10),
    # OpenAI bills cache writes as plain input.
    "gpt-5-nano": Price(0.05, 0.40, 0.05, 0.005),
    "gpt-5-mini": Price(0.25, 2.0, 0.25, 0.025),
    "gpt-5": Price(1.25, 10.0, 1.25, 0.125),
    "gpt-4.1": Price(2.0, 8.0, 2.0, 0.50),
}
_BY_LENGTH = sorted(PRICES, key=len, reverse=True)


def cost_usd(model: str, usage: Usage) -> float | None:
    """The cost of `usage` on `model`, or None when its price is unknown.

    A cost the provider billed wins over the published prices.
    """
    if usage.billed_usd is not None:
        return round(usage.billed_usd, 6)
    prefix = next((p for p in _BY_LENGTH if model.startswith(p)), None)
    if prefix is None:
        return None
    price = PRICES[prefix]
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    )
    return round(total / 1_000_000, 6)
