"""The prices a run's model calls are charged at, and the most a call can cost.

Three sources, first found wins: the operator's (`NEO_PRICES`), which can
correct a published price; the published ones (genai-prices, through
`runner.llm.pricing`); the repository's (`prices:` in its config), for a
model the world has no price for. A repository never lowers a published or
operator price: its file is the budget's subject, not its judge.

`Rates.worst` is what a spend ledger reserves before a call: every prompt
token at the dearest rate it may be billed at (a cache write, where the
provider charges more for one), every output token it may write, each at
the tier the prompt's size reaches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeAlias

from runner.llm.pricing import cost_usd, published_price
from runner.llm.types import Usage

__all__ = ["Price", "PriceBook", "Rate", "Rates"]

_PER_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """A model's price as the operator or a config gives it: US dollars per million tokens."""

    input: float
    output: float
    # None: as `input` (no discount for a cache read, no surcharge for a write).
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"a price's {name} must be a finite number, not negative")


# Dollars per token, by the prompt size it applies past: ((0, base), (200_000, tier), ...).
Rate: TypeAlias = tuple[tuple[int, float], ...]


def _at(rate: Rate, prompt_tokens: int) -> float:
    """The per-token rate for a call whose prompt is `prompt_tokens` long.

    As genai-prices bills tiers: past a tier's start, its rate applies to
    every token of the call.
    """
    value = rate[0][1]
    for start, price in rate[1:]:
        if prompt_tokens > start:
            value = price
    return value


@dataclass(frozen=True, slots=True)
class Rates:
    """One model's per-token rates."""

    input: Rate
    output: Rate
    cache_read: Rate
    # The dearest rate a cache write may be billed at (five minutes' or an hour's).
    cache_write: Rate

    @classmethod
    def flat(cls, price: Price) -> Rates:
        def rate(per_million: float | None) -> Rate:
            value = price.input if per_million is None else per_million
            return ((0, value / _PER_MILLION),)

        return cls(
            input=rate(price.input),
            output=rate(price.output),
            cache_read=rate(price.cache_read),
            cache_write=rate(price.cache_write),
        )

    def worst(self, prompt_tokens: int, output_tokens: int) -> float:
        """The most a call can cost with at most these many prompt and output tokens."""
        dearest = max(
            _at(self.input, prompt_tokens),
            _at(self.cache_write, prompt_tokens),
            _at(self.cache_read, prompt_tokens),
        )
        return prompt_tokens * dearest + output_tokens * _at(self.output, prompt_tokens)

    def output_rate(self, prompt_tokens: int) -> float:
        """Dollars per output token of a call with a prompt this long."""
        return _at(self.output, prompt_tokens)

    def cost(self, usage: Usage) -> float:
        """What `usage` costs at these rates, as one call."""
        prompt = (
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
        )
        return (
            usage.input_tokens * _at(self.input, prompt)
            + usage.cache_creation_input_tokens * _at(self.cache_write, prompt)
            + usage.cache_read_input_tokens * _at(self.cache_read, prompt)
            + usage.output_tokens * _at(self.output, prompt)
        )


@dataclass(frozen=True)
class PriceBook:
    """Prices by model name: the operator's, else the published, else the config's."""

    operator: Mapping[str, Price] = field(default_factory=dict)
    config: Mapping[str, Price] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Published rates, looked up once per book (a lookup takes about a
        # millisecond); not a field, so the book's value is its two tables.
        object.__setattr__(self, "_published", {})

    def rates(self, model: str, provider: str | None = None) -> Rates | None:
        """`model`'s rates, or None when nobody gives it a price."""
        given = self.operator.get(model)
        if given is not None:
            return Rates.flat(given)
        published = self._published_rates(model, provider)
        if published is not None:
            return published
        given = self.config.get(model)
        return None if given is None else Rates.flat(given)

    def known(self, model: str, provider: str | None = None) -> bool:
        return self.rates(model, provider) is not None

    def unpriced(self, models: Iterable[tuple[str | None, str]]) -> tuple[str, ...]:
        """The models of `(provider, model)` pairs that have no price, each once, in order."""
        missing = (model for provider, model in models if not self.known(model, provider))
        return tuple(dict.fromkeys(missing))

    def cost(self, model: str, provider: str | None, usage: Usage) -> float | None:
        """What one call of `model` that used `usage` costs; None when it has no price.

        A cost the usage carries (the provider billed it, or it was priced at
        the published rates as it completed) stands, unless the operator
        prices the model.
        """
        given = self.operator.get(model)
        if given is not None:
            return Rates.flat(given).cost(usage)
        if usage.cost_usd is not None:
            return usage.cost_usd
        if self._published_rates(model, provider) is not None:
            return cost_usd(model, usage, provider)
        given = self.config.get(model)
        return None if given is None else Rates.flat(given).cost(usage)

    def _published_rates(self, model: str, provider: str | None) -> Rates | None:
        found: dict[tuple[str, str | None], Rates | None] = self.__dict__["_published"]
        key = (model, provider)
        if key not in found:
            price = published_price(model, provider)
            found[key] = None if price is None else _rates_of(price)
        return found[key]


def _rates_of(price: Any) -> Rates:
    """genai-prices' `ModelPrice` as rates; a rate it lacks is the input's."""

    def rate(name: str) -> Rate | None:
        value = getattr(price, name, None)
        if value is None:
            return None
        if isinstance(value, Decimal):
            return ((0, float(value) / _PER_MILLION),)
        tiers = [(0, value.base)] + [(tier.start, tier.price) for tier in value.tiers]
        return tuple((start, float(per) / _PER_MILLION) for start, per in tiers)

    given = rate("input_mtok") or ((0, 0.0),)
    writes = [r for r in (rate("cache_write_mtok"), rate("cache_write_1h_mtok")) if r]
    return Rates(
        input=given,
        output=rate("output_mtok") or ((0, 0.0),),
        cache_read=rate("cache_read_mtok") or given,
        cache_write=_dearest(writes) if writes else given,
    )


def _dearest(rates: list[Rate]) -> Rate:
    """One rate at least as high as each of `rates` at every prompt size."""
    starts = sorted({start for rate in rates for start, _ in rate})
    return tuple((start, max(_at(rate, start + 1) for rate in rates)) for start in starts)
