"""What one run may spend, in model calls, time and money, and what the model is told of it.

The loop asks `before_call` before each provider call and `note` after each batch of
tools; money is the run's spend ledger's (`runner.spend`), which every model call goes
through: here it is only asked first, so that a call the ledger would refuse is not
even started. The rules: docs/architecture.md, "Budgets".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from runner.agent.errors import MaxCost
from runner.errors import NeoError
from runner.llm.types import Usage
from runner.spend import MeteredProvider

__all__ = ["BUDGET_KINDS", "WRAP_UP_SECONDS", "RunBudget", "ran_out", "wrap_up_prompt"]

# The last call after a budget ran out has a bound of its own: the time limit
# may be what ran out.
WRAP_UP_SECONDS = 180.0

# The errors a run ends with when a budget runs out; its work so far is kept.
BUDGET_KINDS = frozenset(
    {"max_turns", "max_cost", "timeout", "max_output_tokens", "context_window_exceeded"}
)
_WHY = {
    "max_turns": "You have used all the model calls this run may make",
    "max_cost": "The next model call would pass this run's cost limit",
    "timeout": "This run's time limit has passed",
    "max_output_tokens": "Your last answer hit the output token limit",
    "context_window_exceeded": "The conversation no longer fits the model's context window",
}

_WARN_AT = 0.8


class RunBudget:
    """The limits of one run: turns, time, and the money its `spend` ledger holds."""

    def __init__(
        self,
        *,
        max_turns: int,
        time_limit: float | None = None,
        spend: MeteredProvider | None = None,
        clock: Callable[[], float] = time.monotonic,
        warn_at: float = _WARN_AT,
    ) -> None:
        self._max_turns = max_turns
        self._time_limit = time_limit
        self._spend = spend
        self._clock = clock
        self._started = clock()
        self._warn_turn = max(1, math.ceil(warn_at * max_turns))
        self._warn_at = warn_at
        self._told: set[str] = set()

    @property
    def max_turns(self) -> int:
        """The model calls the run may make."""
        return self._max_turns

    def before_call(self, turn: int, spent: Usage, prompt_tokens: int) -> None:
        """MaxCost when the ledger could not pay for call `turn`, its prompt about
        `prompt_tokens` long, writing even the least useful answer."""
        if self._spend is None:
            return
        try:
            self._spend.check(prompt_tokens)
        except MaxCost as refused:
            raise MaxCost(f"stopped before model call {turn}: {refused}") from None

    def note(self, turn: int) -> str | None:
        left: list[str] = []
        if turn >= self._warn_turn and "turns" not in self._told:
            self._told.add("turns")
            remaining = self._max_turns - turn
            left.append(f"{turn} of {self._max_turns} model calls used, {remaining} left")
        if self._time_limit is not None and "time" not in self._told:
            elapsed = self._clock() - self._started
            if elapsed >= self._warn_at * self._time_limit:
                self._told.add("time")
                minutes = max(0.0, self._time_limit - elapsed) / 60
                left.append(f"about {minutes:.0f} of {self._time_limit / 60:.0f} minutes left")
        ledger = self._spend.ledger if self._spend is not None else None
        cost = ledger.limit if ledger is not None else None
        if cost is not None and "cost" not in self._told:
            assert ledger is not None
            if ledger.spent >= self._warn_at * cost:
                self._told.add("cost")
                left.append(f"${ledger.spent:.2f} of the ${cost:.2f} cost limit spent")
        if not left:
            return None
        return (
            f"[Neo: {'; '.join(left)}. Finish the change you are making, check it, and end with"
            " your summary: what you changed, what you verified and what is left. When the"
            " budget runs out, the work so far is published as an incomplete pull request.]"
        )


def ran_out(error: NeoError) -> bool:
    """Whether `error` is a budget running out (rather than something going wrong)."""
    return error.kind in BUDGET_KINDS


def wrap_up_prompt(error: NeoError) -> str:
    """What the model is told, in its last call, when a budget stopped it."""
    why = _WHY.get(error.kind, _WHY["context_window_exceeded"])
    return (
        f"[Neo: {why}, so the run stops here, and you cannot call tools any more. The work"
        " in the tree is kept. Write your final summary now, in Markdown: what you changed"
        " and why, what you verified (and what failed), and what is left to do, as a"
        " checklist.]"
    )
