"""A cheap estimate of how many tokens a piece of a conversation costs.

Providers count exactly only what they were sent; for what was appended
since (tool results above all) and for a restored session, about four
characters a token is close enough to decide when to compact. An image
costs what a screenshot-sized one does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from runner.llm.types import (
    Image,
    Message,
    Opaque,
    SystemPrompt,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
)

__all__ = ["estimate_messages", "estimate_prompt", "estimate_text"]

_CHARS_PER_TOKEN = 4
_IMAGE_TOKENS = 1_600
# Each message and block has a few tokens of framing.
_MESSAGE_TOKENS = 4


def estimate_text(text: str) -> int:
    return (len(text) + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN


def estimate_messages(messages: Iterable[Message]) -> int:
    total = 0
    for message in messages:
        total += _MESSAGE_TOKENS
        for block in message.content:
            total += _block_tokens(block)
    return total


def estimate_prompt(
    messages: Iterable[Message], system: SystemPrompt, tools: Iterable[ToolSpec]
) -> int:
    """The whole request: system prompt, tool definitions and messages."""
    specs = sum(
        estimate_text(t.name + t.description + json.dumps(t.input_schema, default=str))
        for t in tools
    )
    return estimate_text(system.text) + specs + estimate_messages(messages)


def _block_tokens(block: object) -> int:
    if isinstance(block, Text):
        return estimate_text(block.text)
    if isinstance(block, Image):
        return _IMAGE_TOKENS
    if isinstance(block, ToolUse):
        return _MESSAGE_TOKENS + estimate_text(block.name + json.dumps(block.input, default=str))
    if isinstance(block, ToolResult):
        return _MESSAGE_TOKENS + sum(_block_tokens(part) for part in block.content)
    if isinstance(block, Opaque):
        return estimate_text(json.dumps(block.data, default=str))
    return 0
