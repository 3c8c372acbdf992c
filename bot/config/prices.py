"""Model prices given by a config (`prices:`) or the operator (`NEO_PRICES`).

Per million tokens, in US dollars, as providers publish them. A cost limit
holds only for models with a price; these give one to a model genai-prices
does not know (a new or a local one). Whose price wins: `runner.llm.price_book`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)

from runner.errors import ConfigError
from runner.llm.price_book import Price
from runner.text import one_line

__all__ = [
    "NOT_JSON",
    "PRICES_IN_CONFIG",
    "ModelName",
    "ModelPrice",
    "Prices",
    "prices_from_environment",
    "runner_prices",
]

# Where a job's model can be given a price, for the message refusing one without.
PRICES_IN_CONFIG = "under `prices:` in .github/neo.yml (or the operator's NEO_PRICES)"
NOT_JSON = 'expected a JSON list, e.g. [{"model": "my-model", "input": 1, "output": 2}]'

ModelName = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


class ModelPrice(BaseModel):
    """What a model costs, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelName = Field(description="The model's name, as the provider knows it.")
    input: float = Field(
        ge=0, le=10_000, allow_inf_nan=False, strict=True, description="Per million input tokens."
    )
    output: float = Field(
        ge=0, le=10_000, allow_inf_nan=False, strict=True, description="Per million output tokens."
    )
    cache_read: float | None = Field(
        default=None,
        ge=0,
        le=10_000,
        allow_inf_nan=False,
        strict=True,
        description="Per million prompt tokens read from the provider's cache. Unset: `input`.",
    )
    cache_write: float | None = Field(
        default=None,
        ge=0,
        le=10_000,
        allow_inf_nan=False,
        strict=True,
        description="Per million prompt tokens written to the provider's cache. Unset: `input`.",
    )

    def price(self) -> Price:
        return Price(self.input, self.output, self.cache_read, self.cache_write)


def _one_each(entries: tuple[ModelPrice, ...]) -> tuple[ModelPrice, ...]:
    seen: set[str] = set()
    for entry in entries:
        if entry.model in seen:
            raise ValueError(f"{entry.model!r} is priced twice")
        seen.add(entry.model)
    return entries


Prices = Annotated[tuple[ModelPrice, ...], Field(max_length=100), AfterValidator(_one_each)]
_PRICES: TypeAdapter[tuple[ModelPrice, ...]] = TypeAdapter(Prices)


def runner_prices(prices: Iterable[ModelPrice]) -> dict[str, Price]:
    """`prices` as the runner takes them: by model name."""
    return {entry.model: entry.price() for entry in prices}


def prices_from_environment(environ: Mapping[str, str]) -> dict[str, Price]:
    """`NEO_PRICES`: a JSON list such as `[{"model": "m", "input": 1, "output": 2}]`.

    ConfigError in one line naming the variable when it is not that.
    """
    text = environ.get("NEO_PRICES", "").strip()
    if not text:
        return {}
    try:
        return runner_prices(_PRICES.validate_python(json.loads(text)))
    except json.JSONDecodeError:
        raise ConfigError(f"NEO_PRICES: {NOT_JSON}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"] if not isinstance(part, int))
        if first["type"] == "missing":
            raise ConfigError(f"NEO_PRICES: {where} is missing") from None
        message = one_line(str(first["msg"]).removeprefix("Value error, "), None)
        raise ConfigError(f"NEO_PRICES: {where + ': ' if where else ''}{message}") from None
