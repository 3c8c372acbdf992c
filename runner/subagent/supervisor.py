"""The supervisor of a run's subagents: who may start, how many at once, what they may spend.

Admission and the token check are plain arithmetic on what the children
used so far; the only state is the counts and one semaphore. Money is the
run's ledger's: the children's provider is metered on their share of it, and
the supervisor only asks it first. A refusal is a sentence for the model,
given before any provider call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from runner.agent.errors import AgentError, MaxCost
from runner.llm.provider import Provider
from runner.llm.types import Effort, Usage
from runner.session import SessionStore
from runner.spend import MeteredProvider
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
    """The children of one run: `provider` answers them.

    A metered `provider` (`runner.spend`) charges their calls to its account,
    the children's share of the run's cost limit, and is asked before each.
    """

    def __init__(
        self,
        settings: SubagentSettings,
        provider: Provider,
        *,
        effort: Effort | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.settings = settings
        self.provider = provider
        self.effort = effort
        self.placement = placement
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
        `upcoming_tokens`, would pass their token budget or their share of the cost."""
        spent = self.spent
        cap = self.settings.max_tokens
        if cap is not None and _tokens(spent) + upcoming_tokens >= cap:
            raise SubagentBudget(
                f"the subagents' token budget is spent ({_tokens(spent):,} of {cap:,} tokens);"
                " continue with your own tools"
            )
        if isinstance(self.provider, MeteredProvider):
            try:
                self.provider.check(upcoming_tokens)
            except MaxCost as refused:
                raise SubagentBudget(str(refused)) from None

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
