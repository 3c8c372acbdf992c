"""What the loop reports while it works. Every event is a frozen value whose
mutable payloads are copies, so a consumer cannot reach into agent state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from runner.llm.types import JSONObject, Message, Usage


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A provider call begins; `turn` counts calls within one `send`."""

    turn: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ProviderRetry:
    """A transient provider failure; text streamed since `TurnStarted` is void.

    `fallback` names the model that takes over when another provider does.
    """

    attempt: int
    delay: float
    reason: str
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    message: Message
    stop_reason: str | None


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str
    args: JSONObject


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call_id: str
    name: str
    is_error: bool
    # The result text as the model sees it (after capping).
    output: str
    # Size before capping.
    output_bytes: int
    truncated: bool
    duration_ms: int


@dataclass(frozen=True, slots=True)
class ToolNotice:
    """Something a tool published while running, e.g. a checklist change."""

    call_id: str
    name: str
    payload: object


@dataclass(frozen=True, slots=True)
class Compacted:
    """The compactor rewrote the transcript before the next provider call.

    `stage` is "cleared" (old tool results replaced by notes) or "summarised";
    `usage` is what the compactor's own model call used (zero for clearing).
    """

    stage: str
    tokens_before: int
    tokens_after: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class Steered:
    """A person's message joined the conversation at a turn boundary, as user text.

    `text` is what the model reads, worded by whoever supplied it (the loop
    adds nothing); `author` and `said` are who wrote it and their own words,
    for a log or a page.
    """

    author: str
    said: str
    text: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """`send` is done: `error` is None on success, else the error's kind."""

    stop_reason: str | None
    text: str
    usage: Usage
    error: str | None = None
    message: str = ""


Event: TypeAlias = (
    TurnStarted
    | TextDelta
    | ProviderRetry
    | AssistantMessage
    | ToolStarted
    | ToolFinished
    | ToolNotice
    | Compacted
    | Steered
    | TurnFinished
)
