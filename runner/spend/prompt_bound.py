"""An upper bound on a request's prompt tokens, for the ledger's reservation.

Estimates (about four characters a token, `runner.compact.tokens`) are fine
for deciding when to compact but may fall short, and a reservation must not.
Every tokenizer Neo's providers use maps each token to at least one byte of
the text, so a text costs at most its UTF-8 bytes (JSON is counted in its
ASCII-escaped form, never shorter); framing, images and the tools' preamble
get allowances above what any provider charges. That alone is about four
times the truth, so `PromptBound` remembers what the provider counted for
the requests it saw: a conversation's next request is its last one's count
plus the bound of what was appended since (the last word, which asks for no
tool, is one too). A prompt never exceeds the window of a model whose
window is known: the provider refuses larger ones.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

from runner.llm.limits import DEFAULT_LIMITS, limits_for
from runner.llm.types import Image, Message, Opaque, Request, Text, ToolResult, ToolUse, Usage

__all__ = ["PromptBound", "bound_messages", "bound_request", "within_window"]

# Allowances, in tokens, each above what a provider adds.
_MESSAGE = 16
_BLOCK = 16
_IMAGE = 8_000
_REQUEST = 64
# What a provider adds to the prompt when tools are offered (Anthropic's is
# about 350 tokens) and per tool definition.
_TOOLS = 1_024
_TOOL = 32
# On what the provider counted: a hair more, in case its framing of the
# same messages differs from one request to the next.
_COUNTED_SHARE = 1.01
_COUNTED_SLACK = 256
# Requests remembered: a run's agent and its subagents running at once.
_REMEMBERED = 8


def _bytes(text: str) -> int:
    # An ASCII string knows it is one (a flag, no scan) and is a byte a character.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _json(value: object) -> int:
    return len(json.dumps(value, default=str))


def _block(block: object) -> int:
    if isinstance(block, Text):
        return _BLOCK + _bytes(block.text)
    if isinstance(block, Image):
        return _BLOCK + _IMAGE
    if isinstance(block, ToolUse):
        return _BLOCK + _bytes(block.id) + _bytes(block.name) + _json(block.input)
    if isinstance(block, ToolResult):
        return _BLOCK + _bytes(block.tool_use_id) + sum(_block(part) for part in block.content)
    if isinstance(block, Opaque):
        return _BLOCK + _json(block.data)
    return _BLOCK


def bound_messages(messages: tuple[Message, ...] | list[Message]) -> int:
    return sum(_MESSAGE + sum(_block(block) for block in m.content) for m in messages)


def bound_request(request: Request) -> int:
    """At most how many prompt tokens `request` is, from its text alone."""
    system = sum(_BLOCK + _bytes(segment) for segment in request.system.segments)
    tools = sum(
        _TOOL + _bytes(t.name) + _bytes(t.description) + _json(dict(t.input_schema))
        for t in request.tools
    )
    preamble = _TOOLS if request.tools else 0
    return _REQUEST + system + preamble + tools + bound_messages(tuple(request.messages))


def within_window(tokens: int, model: str) -> int:
    """`tokens`, or `model`'s context window when that is known and smaller."""
    limits = limits_for(model)
    return tokens if limits is DEFAULT_LIMITS else min(tokens, limits.context_window)


@dataclass(frozen=True, slots=True)
class _Counted:
    request: Request
    tokens: int


class PromptBound:
    """Bounds of requests, tightened by what the provider counted of earlier ones."""

    def __init__(self) -> None:
        self._counted: deque[_Counted] = deque(maxlen=_REMEMBERED)

    def tokens(self, request: Request) -> int:
        """At most how many prompt tokens `request` is."""
        for counted in reversed(self._counted):
            grown = _grown_from(counted.request, request)
            if grown is not None:
                # Only what was appended is bounded from its text: a long
                # conversation is not read through on every call.
                known = int(counted.tokens * _COUNTED_SHARE) + _COUNTED_SLACK
                # The tools offered the same way or not at all (the last
                # word): a provider may word its tools' preamble otherwise.
                preamble = 0 if counted.request.tool_choice == request.tool_choice else _TOOLS
                return known + preamble + bound_messages(grown)
        return bound_request(request)

    def counted(self, request: Request, usage: Usage) -> None:
        """The provider counted `usage`'s prompt tokens for `request`."""
        tokens = usage.input_tokens + usage.cache_creation_input_tokens
        tokens += usage.cache_read_input_tokens
        if tokens > 0:
            self._counted.append(_Counted(request, tokens))


def _grown_from(before: Request, after: Request) -> tuple[Message, ...] | None:
    """The messages `after` appends to `before`'s, when it is `before` with more
    messages at the end and nothing else changed but, perhaps, the tool
    choice; else None."""
    old, new = before.messages, after.messages
    if len(old) > len(new):
        return None
    # The tool choice may change: the tools are sent all the same, and the
    # run's last word asks for none after turns that asked for any.
    if (before.system, before.effort) != (after.system, after.effort) or tuple(
        before.tools
    ) != tuple(after.tools):
        return None
    if any(a is not b and a != b for a, b in zip(old, new, strict=False)):
        return None
    return tuple(new[len(old) :])
