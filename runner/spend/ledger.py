"""One run's spend: each model call reserves its worst case before it is made.

Pure arithmetic over prices (no I/O, no clock), for one event loop. A call
asks `reserve` with the models that may answer it and an upper bound of its
prompt; it gets a `Grant` of the output tokens it may ask for, or MaxCost
when even `MIN_OUTPUT_TOKENS` would not fit: then it is not made. What the
provider billed then settles the grant. Reservations of calls in flight
count as spent until they settle, so calls made at once (subagents) cannot
pass the limit together.

`Account`s are caps within the ledger, never beside it: a subagents' share
limits what their calls take of the one limit. The run's own account keeps
back, after each of its calls, what its last word would cost (a summary of
`WRAP_UP_TOKENS` over the conversation as it may then be), so that when a
budget stops the run its summary can still be paid for; `wrap_up` releases
it for that one call.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from runner.agent.errors import MaxCost
from runner.errors import ConfigError
from runner.llm.price_book import PriceBook, Rates
from runner.llm.types import Usage

__all__ = [
    "MIN_OUTPUT_TOKENS",
    "PRICES_IN_ENVIRONMENT",
    "WRAP_UP_MARGIN_TOKENS",
    "WRAP_UP_TOKENS",
    "Account",
    "Grant",
    "Ledger",
    "Quote",
]

log = logging.getLogger("neo.spend")

# Where `neo run` takes prices from; a job's config says more.
PRICES_IN_ENVIRONMENT = "in NEO_PRICES"
# A call that cannot write this much is not worth making.
MIN_OUTPUT_TOKENS = 1_024
# The run's last word: a summary of what it did and what is left.
WRAP_UP_TOKENS = 4_096
# What may join the conversation between a call and the last word: the
# results of the tools the call asked for.
WRAP_UP_MARGIN_TOKENS = 8_192


@dataclass(frozen=True, slots=True)
class Quote:
    """A model that may answer a call, and at most how long the call's prompt is."""

    provider: str
    model: str
    prompt_tokens: int


class Account:
    """Who the ledger charges a call to: the run itself, or a share of it with a cap.

    `name` says whose calls it pays, for messages: "the run", "the subagents' share".
    """

    def __init__(self, name: str, cap: float | None, *, keeps_wrap_up: bool) -> None:
        self.name = name
        self.cap = cap
        self.keeps_wrap_up = keeps_wrap_up
        self.spent = 0.0
        self.reserved = 0.0
        self.calls = 0


@dataclass(eq=False)
class Grant:
    """A reservation: the call may ask for `max_tokens` of output and cost `amount`."""

    account: Account
    max_tokens: int
    amount: float
    open: bool = True


class Ledger:
    """The spend of one run, under `limit` US dollars (None: counted, never refused)."""

    def __init__(
        self,
        limit: float | None,
        prices: PriceBook | None = None,
        *,
        where_prices_go: str = PRICES_IN_ENVIRONMENT,
    ) -> None:
        if limit is not None and not (math.isfinite(limit) and limit > 0):
            raise ConfigError("the cost limit must be a positive number of US dollars")
        self.limit = limit
        self.prices = prices or PriceBook()
        # Where a model's price can be given, for the message refusing one without.
        self.where_prices_go = where_prices_go
        self.spent = 0.0
        self.calls = 0
        # Calls of models without a price (made only without a limit), by model:
        # counted at no cost, and named wherever the cost is shown.
        self.unpriced: dict[str, int] = {}
        self.reserved = 0.0
        # What the run's own account keeps back for its last word.
        self.held = 0.0
        self.final = False
        self.main = Account("the run", None, keeps_wrap_up=True)

    def share(self, name: str, fraction: float | None) -> Account:
        """An account named `name` capped at `fraction` of the limit (None, or no
        limit: only the limit caps it)."""
        cap = None if fraction is None or self.limit is None else self.limit * fraction
        return Account(name, cap, keeps_wrap_up=False)

    @property
    def cost(self) -> float | None:
        """What the run's calls cost, all told; None when every call it made had no price."""
        if self.calls and self.unpriced_calls == self.calls:
            return None
        return self.spent

    @property
    def unpriced_calls(self) -> int:
        return sum(self.unpriced.values())

    @property
    def left(self) -> float | None:
        """What is neither spent nor reserved; None without a limit."""
        if self.limit is None:
            return None
        return self.limit - self.spent - self.reserved

    def wrap_up(self) -> None:
        """The run's last call comes next: what was kept back for it is its to spend."""
        self.final = True
        self.held = 0.0

    def require_prices(self, models: Sequence[tuple[str, str]]) -> None:
        """ConfigError naming the first of `(provider, model)` pairs a limit cannot
        hold for, having no price; without a limit any model may run."""
        if self.limit is not None:
            for model in self.prices.unpriced(models):
                raise ConfigError(self._unpriced(model))

    def reserve(
        self,
        account: Account,
        quotes: Sequence[Quote],
        want: int,
        *,
        minimum: int = MIN_OUTPUT_TOKENS,
    ) -> Grant:
        """Reserve a call answered by one of `quotes` asking for up to `want` output tokens.

        The grant's `max_tokens` is `want`, or less when only less fits; MaxCost
        when `minimum` (or `want`, if smaller) does not; ConfigError when an
        answering model has no price and there is a limit.
        """
        if self.limit is None:
            return Grant(account, want, 0.0)
        plan = _Plan(self, account, quotes)
        granted = plan.largest(min(minimum, want), want)
        amount = plan.cost(granted)
        self.reserved += amount
        account.reserved += amount
        if plan.keeps:
            self.held = plan.kept(granted)
        return Grant(account, granted, amount)

    def check(
        self, account: Account, quotes: Sequence[Quote], *, minimum: int = MIN_OUTPUT_TOKENS
    ) -> None:
        """Raise as `reserve` would for a call that asks for `minimum`; reserve nothing."""
        if self.limit is not None:
            _Plan(self, account, quotes).largest(minimum, minimum)

    def settle(self, grant: Grant, quote: Quote, usage: Usage) -> float | None:
        """The call of `grant` was answered by `quote`'s model with `usage`: what it cost.

        None when the model has no price (only without a limit: the call is
        recorded at no cost). A cost past the reservation (a provider billing
        above its published rates) is counted all the same.
        """
        cost = self.prices.cost(quote.model, quote.provider, usage)
        if cost is None and self.limit is not None:
            cost = grant.amount  # priced when reserved, not as answered: the worst case stands
        self._close(grant)
        grant.account.calls += 1
        self.calls += 1
        if cost is None:
            self.unpriced[quote.model] = self.unpriced.get(quote.model, 0) + 1
        else:
            if cost > grant.amount + 1e-9 and self.limit is not None:
                log.warning(
                    "a call of %s cost $%.4f, more than the $%.4f reserved",
                    quote.model,
                    cost,
                    grant.amount,
                )
            self.spent += cost
            grant.account.spent += cost
        return cost

    def release(self, grant: Grant) -> None:
        """The call of `grant` failed without a response: nothing was billed for it."""
        self._close(grant)

    def _close(self, grant: Grant) -> None:
        if grant.open:
            grant.open = False
            self.reserved = max(0.0, self.reserved - grant.amount)
            grant.account.reserved = max(0.0, grant.account.reserved - grant.amount)

    def rates(self, quote: Quote) -> Rates:
        rates = self.prices.rates(quote.model, quote.provider)
        if rates is None:
            raise ConfigError(self._unpriced(quote.model))
        return rates

    def _unpriced(self, model: str) -> str:
        limit = f"${self.limit:.2f}" if self.limit is not None else "a"
        return (
            f"model {model!r} has no known price, so the {limit} cost limit cannot hold: give"
            f" its price per million tokens {self.where_prices_go}, e.g."
            f' [{{"model": "{model}", "input": 3, "output": 15}}]'
        )


class _Plan:
    """What a call of `account` answered by one of `quotes` may take of `ledger` now."""

    def __init__(self, ledger: Ledger, account: Account, quotes: Sequence[Quote]) -> None:
        assert ledger.limit is not None
        self._ledger = ledger
        self._account = account
        self._quotes = [(ledger.rates(quote), quote.prompt_tokens) for quote in quotes]
        self.keeps = account.keeps_wrap_up and not ledger.final
        held = 0.0 if self.keeps else ledger.held
        self._room = ledger.limit - ledger.spent - ledger.reserved - held
        cap = account.cap
        self._own = math.inf if cap is None else cap - account.spent - account.reserved

    def cost(self, out: int) -> float:
        """The call's worst case, asking for `out` output tokens."""
        return max(rates.worst(prompt, out) for rates, prompt in self._quotes)

    def kept(self, out: int) -> float:
        """What the run's last word would cost after the call, when the account keeps it."""
        if not self.keeps:
            return 0.0
        return max(
            rates.worst(prompt + out + WRAP_UP_MARGIN_TOKENS, WRAP_UP_TOKENS)
            for rates, prompt in self._quotes
        )

    def fits(self, out: int) -> bool:
        cost = self.cost(out)
        return cost + self.kept(out) <= self._room and cost <= self._own

    def largest(self, low: int, high: int) -> int:
        """The most output tokens in [low, high] that fit; MaxCost when `low` does not.

        Costs rise with the output asked for, so a bisection finds it.
        """
        if not self.fits(low):
            raise MaxCost(self._refusal(low))
        if self.fits(high):
            return high
        while low < high:
            middle = (low + high + 1) // 2
            if self.fits(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def _refusal(self, out: int) -> str:
        ledger, account = self._ledger, self._account
        need, kept = self.cost(out), self.kept(out)
        prompt = max(prompt for _, prompt in self._quotes)
        call = f"up to ${need:.2f} (a prompt of up to {prompt:,} tokens)"
        if need > self._own:
            assert account.cap is not None
            return (
                f"{account.name} of the cost limit is spent (${account.spent:.2f} of"
                f" ${account.cap:.2f}; the next call would cost {call}); continue with your"
                " own tools"
            )
        assert ledger.limit is not None
        keep = f", and ${kept:.2f} is kept for the summary" if kept else ""
        return (
            f"${ledger.spent:.2f} of the ${ledger.limit:.2f} cost limit is spent: the next"
            f" model call would cost {call}{keep}, more than the ${max(self._room, 0.0):.2f}"
            " left"
        )
