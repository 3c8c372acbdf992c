"""What subagents a run may start: on or off, and the supervisor's budgets."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SubagentSettings"]


@dataclass(frozen=True, slots=True)
class SubagentSettings:
    enabled: bool = True
    # Model calls each child may make.
    max_turns: int = 20
    # Children running at once; more calls in one response wait their turn.
    max_parallel: int = 4
    # Children over the whole run; None: no limit.
    max_children: int | None = 16
    # The children's model (of the run's provider); None: the run's own.
    model: str | None = None
    # The share of the run's cost limit its children may spend together;
    # None, or a run without a cost limit: only the run's own limit applies.
    budget_share: float | None = 0.5
    # Tokens (input and output) all children together may use; None: no limit.
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.max_parallel < 1:
            raise ValueError("subagent max_turns and max_parallel must be at least 1")
        if self.max_children is not None and self.max_children < 0:
            raise ValueError("subagent max_children cannot be negative")
        if self.budget_share is not None and not 0 < self.budget_share <= 1:
            raise ValueError("subagent budget_share must be more than 0 and at most 1")
