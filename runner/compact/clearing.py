"""Clearing: old tool results give way to one-line notes, with no model call.

What is kept whole, and why: docs/architecture.md, "Compaction".
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from runner.llm.types import Block, Message, Text, ToolResult, ToolUse

__all__ = ["CLEARED_MARK", "clear_tool_results"]

CLEARED_MARK = "[cleared to save context]"
_ARGS_CHARS = 160


def clear_tool_results(
    messages: Sequence[Message], *, keep: int, keep_tools: Collection[str] = ()
) -> tuple[tuple[Message, ...], int]:
    """`messages` with all but the newest `keep` tool results cleared; and how many were.

    Results already cleared, error results and those of `keep_tools` are
    left as they are and do not count towards `keep`.
    """
    calls = {
        block.id: block
        for message in messages
        if message.role == "assistant"
        for block in message.content
        if isinstance(block, ToolUse)
    }
    clearable = [
        (m, b)
        for m, message in enumerate(messages)
        if message.role == "user"
        for b, block in enumerate(message.content)
        if isinstance(block, ToolResult) and _clearable(block, calls, keep_tools)
    ]
    chosen = set(clearable[: max(0, len(clearable) - keep)])
    if not chosen:
        return tuple(messages), 0
    rewritten: list[Message] = []
    for m, message in enumerate(messages):
        if not any((m, b) in chosen for b in range(len(message.content))):
            rewritten.append(message)
            continue
        content: list[Block] = []
        for b, block in enumerate(message.content):
            if (m, b) in chosen:
                assert isinstance(block, ToolResult)
                content.append(_cleared(block, calls.get(block.tool_use_id)))
            else:
                content.append(block)
        rewritten.append(Message(message.role, tuple(content), message.usage))
    return tuple(rewritten), len(chosen)


def _clearable(result: ToolResult, calls: dict[str, ToolUse], keep_tools: Collection[str]) -> bool:
    if result.is_error or result.text.startswith(CLEARED_MARK):
        return False
    call = calls.get(result.tool_use_id)
    return call is None or call.name not in keep_tools


def _cleared(result: ToolResult, call: ToolUse | None) -> ToolResult:
    size = sum(
        len(part.text.encode("utf-8", "surrogatepass"))
        for part in result.content
        if isinstance(part, Text)
    )
    images = sum(1 for part in result.content if not isinstance(part, Text))
    had = f"{size:,} bytes" + (f" and {images} image{'s' * (images != 1)}" if images else "")
    if call is None:
        what = "this tool call"
    else:
        args = json.dumps(call.input, ensure_ascii=False, sort_keys=True, default=str)
        if len(args) > _ARGS_CHARS:
            args = args[: _ARGS_CHARS - 1] + "…"
        what = f"{call.name} {args}"
    note = f"{CLEARED_MARK} {what} returned {had}; call it again if you need it."
    return ToolResult(result.tool_use_id, (Text(note),), result.is_error)
