"""The compaction plug point: what the loop hands a compactor, and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from runner.llm.types import Message, SystemPrompt, ToolSpec, Usage

__all__ = ["Compaction", "Compactor", "PromptState", "Stage"]

# `cleared`: old tool results replaced by one-line notes, no model call.
# `summarised`: the older conversation replaced by a model-written summary.
Stage = Literal["cleared", "summarised"]


@dataclass(frozen=True, slots=True)
class PromptState:
    """The next provider call as the loop is about to make it."""

    messages: tuple[Message, ...]
    system: SystemPrompt
    tools: tuple[ToolSpec, ...]
    # The whole prompt's size in tokens: measured by the provider up to its
    # last response, estimated for what was appended since.
    tokens: int
    # The output the call may produce, reserved within the window.
    max_tokens: int
    # The provider refused the prompt as too long: compact whatever the size.
    overflowed: bool = False


@dataclass(frozen=True, slots=True)
class Compaction:
    """A rewritten transcript, and what the compactor's own model call used."""

    stage: Stage
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    usage: Usage = field(default_factory=Usage)


class Compactor(Protocol):
    """Called before each provider call; None leaves the transcript as it is.

    A compactor may call a model itself; the loop adds `Compaction.usage` to
    the run's usage exactly once. The messages it returns must be a valid
    transcript: every tool_use answered in the next message, roles alternating,
    the last message the user's.
    """

    async def compact(self, state: PromptState) -> Compaction | None: ...
