"""What model calls cost, from genai-prices' published per-token prices.

Each call is priced when it completes (`PricedProvider`), so a run's usage
carries the sum of its calls' costs: tiered prices (more per token past a
prompt size) apply per call, and a run that changed model midway is priced
by the model of each call. A cost the provider billed wins.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from decimal import Decimal
from typing import Any

from runner.llm.provider import (
    Completed,
    Provider,
    StreamEvent,
    close_provider,
    prepare_provider,
)
from runner.llm.types import Request, Usage

__all__ = ["PricedProvider", "cost_usd", "price_known", "priced", "published_price"]

# Neo's provider names as genai-prices knows them; any other provider (a
# Chat Completions server) is matched by the model's name alone.
_PROVIDER_IDS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "google": "google",
    "openrouter": "openrouter",
}


def cost_usd(model: str, usage: Usage, provider: str | None = None) -> float | None:
    """What `usage` cost in US dollars, or None when the price is unknown.

    A usage whose calls were priced (or billed) carries its cost; anything
    else is priced here as one call of `model`.
    """
    if usage.cost_usd is not None:
        return round(usage.cost_usd, 6)
    price = _lookup(model, provider, usage)
    return None if price is None else round(float(price), 6)


def price_known(model: str, provider: str | None = None) -> bool:
    """Whether `model` has a published price, so a cost limit can hold."""
    return _lookup(model, provider, Usage()) is not None


def priced(usage: Usage, model: str, provider: str | None = None) -> Usage:
    """`usage` with its cost set, unless the provider billed it or the price is unknown."""
    if usage.cost_usd is not None:
        return usage
    cost = cost_usd(model, usage, provider)
    return usage if cost is None else replace(usage, cost_usd=cost)


class PricedProvider:
    """A provider whose completed responses carry what the call cost."""

    def __init__(self, inner: Provider) -> None:
        self._inner = inner

    @property
    def inner(self) -> Provider:
        """The provider whose calls this one prices."""
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    async def aclose(self) -> None:
        await close_provider(self._inner)

    async def prepare(self) -> None:
        await prepare_provider(self._inner)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        async for event in self._inner.stream(request):
            if isinstance(event, Completed):
                response = event.response
                usage = priced(response.usage, response.model or self.model, self.name)
                event = Completed(replace(response, usage=usage))
            yield event


def published_price(model: str, provider: str | None = None) -> Any | None:
    """genai-prices' `ModelPrice` of `model` (its rates, tiers included), or None."""
    import genai_prices

    try:
        return genai_prices.calc_price(
            genai_prices.Usage(), model_ref=model, provider_id=_PROVIDER_IDS.get(provider or "")
        ).model_price
    except LookupError:
        return None


def _lookup(model: str, provider: str | None, usage: Usage) -> Decimal | None:
    # Its price data takes about half a second to load: imported here, only
    # runs that price a call pay for it.
    import genai_prices

    tokens = genai_prices.Usage(
        # genai-prices counts every prompt token as input, cached or not.
        input_tokens=usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens,
        # Those of an hour's cache, dearer than five minutes' where the model says so.
        cache_write_1h_tokens=usage.cache_creation_1h_input_tokens,
        cache_read_tokens=usage.cache_read_input_tokens,
        output_tokens=usage.output_tokens,
    )
    try:
        return genai_prices.calc_price(
            tokens, model_ref=model, provider_id=_PROVIDER_IDS.get(provider or "")
        ).total_price
    except LookupError:
        return None
