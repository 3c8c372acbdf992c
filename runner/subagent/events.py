"""What the `agent` tool publishes while a child runs (as `ToolNotice` payloads)."""

from __future__ import annotations

from dataclasses import dataclass

from runner.agent.events import Event
from runner.llm.types import Usage

__all__ = ["ChildEvent", "ChildFinished", "ChildStarted", "ChildTurn"]


@dataclass(frozen=True, slots=True)
class ChildStarted:
    """Child `number` of the run began its task, named by `description`."""

    number: int
    description: str


@dataclass(frozen=True, slots=True)
class ChildTurn:
    """Child `number` makes its model call `turn`."""

    number: int
    turn: int


@dataclass(frozen=True, slots=True)
class ChildFinished:
    """Child `number` ended; `error` is None on success, else the error's kind."""

    number: int
    description: str
    turns: int
    usage: Usage
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ChildEvent:
    """What child `number` did: one of its loop's events, for a transcript of its own
    (the run page's). Its tool calls, their results and its answers; not its text
    deltas (the answer carries the text)."""

    number: int
    event: Event
