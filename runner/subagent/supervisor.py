"""The supervisor of a run's subagents: who may start, how many at once, what they may spend.

Admission and the spending checks are plain arithmetic on what the children
used so far; the only state is the counts and one semaphore. A refusal is a
sentence for the model, given before any provider call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from runner.agent.errors import AgentError
from runner.llm.pricing import cost_usd
from runner.llm.provider import Provider
from runner.llm.types import Effort, Usage
from runner.session import SessionStore
from runner.subagent.settings import SubagentSettings

__all__ = ["ChildBudget", "Placement", "SubagentBudget", "Supervisor", "children_provider"]


class SubagentBudget(AgentError):
    """The children's share of the run's budget is spent: the call was not made."""

    kind = "subagent_budget"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a run's children save their transcripts: beside session `session_id`."""

    store: SessionStore
    session_id: str


def _tokens(usage: Usage) -> int:
    return (
        usage.input_tokens
        + usage.output_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
    )


class Supervisor:
    """The children of one run: `provider` answers them, `cost_limit` is the run's."""

    def __init__(
        self,
        settings: SubagentSettings,
        provider: Provider,
        *,
        cost_limit: float | None = None,
        effort: Effort | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.settings = settings
        self.provider = provider
        self.effort = effort
        self.placement = placement
        self._cost_cap = (
            cost_limit * settings.budget_share
            if cost_limit is not None and settings.budget_share is not None
            else None
        )
        self._slots = asyncio.Semaphore(settings.max_parallel)
        # Numbers go on from the children an earlier run of the session saved.
        self._first = (
            placement.store.child_count(placement.session_id) if placement is not None else 0
        )
        self._admitted = 0
        self._done = Usage()
        self._running: dict[int, Usage] = {}

    @property
    def spent(self) -> Usage:
        """What the children used so far, the running ones' calls included."""
        total = self._done
        for usage in self._running.values():
            total = total + usage
        return total

    def admit(self) -> int:
        """The next child's number; SubagentBudget when no child may start."""
        limit = self.settings.max_children
        if limit is not None and self._admitted >= limit:
            raise SubagentBudget(
                f"no subagent started: this run may start {limit}, and all have run;"
                " continue with your own tools"
            )
        self.check(upcoming_tokens=0)
        self._admitted += 1
        number = self._first + self._admitted
        self._running[number] = Usage()
        return number

    def check(self, *, upcoming_tokens: int) -> None:
        """Raise SubagentBudget when the children's spending, with a next prompt of
        `upcoming_tokens`, would pass their token or cost budget."""
        spent = self.spent
        cap = self.settings.max_tokens
        if cap is not None and _tokens(spent) + upcoming_tokens >= cap:
            raise SubagentBudget(
                f"the subagents' token budget is spent ({_tokens(spent):,} of {cap:,} tokens);"
                " continue with your own tools"
            )
        if self._cost_cap is not None:
            model, name = self.provider.model, self.provider.name
            so_far = cost_usd(model, spent, name) or 0.0
            upcoming = cost_usd(model, Usage(input_tokens=upcoming_tokens), name) or 0.0
            if so_far + upcoming > self._cost_cap:
                raise SubagentBudget(
                    f"the subagents' share of the cost limit is spent (${so_far:.2f} of"
                    f" ${self._cost_cap:.2f}); continue with your own tools"
                )

    def running(self, number: int, usage: Usage) -> None:
        """Child `number` has used `usage` so far."""
        if number in self._running:
            self._running[number] = usage

    def finished(self, number: int, usage: Usage) -> None:
        """Child `number` ended having used `usage`, counted once."""
        if self._running.pop(number, None) is not None:
            self._done = self._done + usage

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Held while a child runs: at most `max_parallel` at once."""
        async with self._slots:
            yield


def children_provider(
    settings: SubagentSettings,
    provider: Provider,
    make: Callable[[str, str], Provider],
    name: str,
) -> Provider:
    """The provider children call: the run's own `provider`, unless they have a model of
    their own, which `make` builds for provider `name` (the caller then closes it)."""
    model = settings.model
    if not settings.enabled or model is None or model == provider.model:
        return provider
    return make(name, model)


class ChildBudget:
    """The loop's budget for child `number`: the supervisor's pool, checked before each call."""

    def __init__(self, supervisor: Supervisor, number: int) -> None:
        self._supervisor = supervisor
        self._number = number

    def before_call(self, turn: int, spent: Usage, prompt_tokens: int) -> None:
        self._supervisor.running(self._number, spent)
        # Room for this call and one more of its size: the call without tools
        # that asks a child the budget stopped for what it found.
        self._supervisor.check(upcoming_tokens=2 * prompt_tokens)

    def note(self, turn: int) -> str | None:
        return None
