"""Where a transcript may be cut: never between a tool_use and its tool_result.

A kept tail starts at an assistant message. Its tool calls are answered in
the user message right after it, which the tail holds too, and a summary in
a user message before it keeps roles alternating.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.compact.tokens import estimate_messages
from runner.llm.types import Message

__all__ = ["safe_tail_start"]


def safe_tail_start(messages: Sequence[Message], budget: int, *, after: int = 0) -> int:
    """The index of the first message of the longest safe tail within `budget` tokens.

    The tail starts after message `after` (at least the first message, the
    task, which the head keeps elsewhere). With no assistant message there,
    or when not even the newest exchange fits, the tail is empty:
    `len(messages)`.
    """
    start = len(messages)
    size = 0
    for index in range(len(messages) - 1, max(after, 0), -1):
        size += estimate_messages((messages[index],))
        if size > budget:
            break
        if messages[index].role == "assistant":
            start = index
    return start
