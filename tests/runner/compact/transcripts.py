"""What makes a transcript valid for every provider, checked in one place."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from runner.llm.types import Message, ToolResult, ToolUse


def problems(messages: Sequence[Message], *, answered: bool = False) -> list[str]:
    """Why `messages` could not be sent as they are; empty when they can.

    `answered`: the transcript of a finished turn, which ends with the
    assistant's answer (the next request adds the user's message).
    """
    found: list[str] = []
    if not messages:
        return ["empty transcript"]
    if messages[0].role != "user":
        found.append("the first message is not the user's")
    if messages[-1].role != ("assistant" if answered else "user"):
        found.append(f"the last message is not the {'assistant' if answered else 'user'}'s")
    for index, (one, two) in enumerate(itertools.pairwise(messages)):
        if one.role == two.role:
            found.append(f"messages {index} and {index + 1} are both {one.role}")
    for index, message in enumerate(messages):
        results = {b.tool_use_id for b in message.content if isinstance(b, ToolResult)}
        if results:
            previous = messages[index - 1] if index else None
            asked = (
                {b.id for b in previous.content if isinstance(b, ToolUse)} if previous else set()
            )
            if not results <= asked:
                found.append(f"message {index} answers calls the message before did not make")
        calls = {b.id for b in message.content if isinstance(b, ToolUse)}
        if calls:
            following = messages[index + 1] if index + 1 < len(messages) else None
            replies: set[str] = (
                {b.tool_use_id for b in following.content if isinstance(b, ToolResult)}
                if following
                else set()
            )
            if calls - replies:
                found.append(f"message {index} has calls the next message does not answer")
    return found
