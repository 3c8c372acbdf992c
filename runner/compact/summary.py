"""Summarising: a model call that condenses the older conversation into notes.

The model that did the work reads a plain-text rendering of what is being
dropped (no tools are offered: it cannot act, only write) and answers with
the working notes another session would need to go on: each of the user's
requests and what became of it, the decisions, the files changed, the
commands run and what they showed, what still fails, the next steps and the
open checklist.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from runner.compact.requests import request_texts, shorten
from runner.llm.types import Image, Message, Opaque, Text, ToolResult, ToolUse

__all__ = ["SUMMARY_SYSTEM", "render_for_summary"]

SUMMARY_SYSTEM = """\
You are condensing the transcript of a coding agent's work so that it can go on \
without the full conversation, which no longer fits its context window. Write \
working notes, not a story. Use exactly these headings, each with short bullet \
points; write "none" under a heading with nothing to say:

## Requests
## Decisions
## Files changed
## Commands run
## Current failures
## Next steps
## Open checklist

Under Requests, list every request the user made, oldest first, and what \
became of each (done, in progress, not started, superseded). Keep every fact \
needed to continue: file paths with line numbers, function and \
test names, exact error messages, the command lines and their exit codes. \
Leave out greetings, apologies and anything already resolved. Do not call tools \
and do not invent results."""

_INTRO = "The conversation so far, oldest first:\n\n"
_ASK = "\n\nWrite the working notes now, under the headings you were given."
# Within a long tool output the start and the end say the most.
_RESULT_HEAD = 1_500
_RESULT_TAIL = 1_000
# A request among the messages left out keeps this much of itself.
_GAP_REQUEST_CHARS = 4_000


def render_for_summary(messages: Sequence[Message], max_chars: int) -> str:
    """`messages` as one plain-text document of at most about `max_chars`.

    Long tool results keep their head and tail. When the whole still does not
    fit, the oldest exchanges are cut from the middle of the document, after
    the first message, so the task and the latest work survive; a user's
    request among them is never cut, only shortened (`_GAP_REQUEST_CHARS`).
    """
    parts = [_render(message) for message in messages]
    document = _join(parts)
    if len(document) <= max_chars:
        return _INTRO + document + _ASK
    head, rest = parts[:1], parts[1:]
    budget = max_chars - len(_join(head)) - 200
    # Requests first: whatever is left out around them, they stay.
    asked = [
        (index, f"user: {shorten(text.strip(), _GAP_REQUEST_CHARS)}")
        for index, message in enumerate(messages[1:])
        for text in request_texts(message)
    ]
    budget -= sum(len(line) + 2 for _, line in asked)
    kept: list[str] = []
    used = 0
    for part in reversed(rest):
        if used + len(part) > budget:
            break
        kept.append(part)
        used += len(part) + 2
    first_kept = len(rest) - len(kept)
    gap: list[str] = []
    if first_kept:
        gap.append(f"[{first_kept} older messages left out here: they did not fit]")
        left_out = [line for index, line in asked if index < first_kept]
        if left_out:
            gap.append("[the user's requests among them, in order:]")
            gap.extend(left_out)
    trimmed = _join([*head, *gap, *reversed(kept)])
    if len(trimmed) > max_chars:  # even the first message alone is too long
        trimmed = trimmed[: max_chars // 2] + "\n[…]\n" + trimmed[-max_chars // 2 :]
    return _INTRO + trimmed + _ASK


def _join(parts: Sequence[str]) -> str:
    return "\n\n".join(parts)


def _render(message: Message) -> str:
    lines: list[str] = []
    for block in message.content:
        if isinstance(block, Text) and block.text.strip():
            lines.append(f"{message.role}: {block.text.strip()}")
        elif isinstance(block, ToolUse):
            args = json.dumps(block.input, ensure_ascii=False, sort_keys=True, default=str)
            lines.append(f"assistant called {block.name} {_clip(args, 600, 200)}")
        elif isinstance(block, ToolResult):
            label = "tool error" if block.is_error else "tool result"
            lines.append(f"{label}: {_clip(block.text, _RESULT_HEAD, _RESULT_TAIL)}")
        elif isinstance(block, Image):
            lines.append(f"{message.role}: [an image]")
        elif isinstance(block, Opaque):
            continue  # thinking: the model's own scratch work, not the record
    return "\n".join(lines)


def _clip(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[… {len(text) - head - tail:,} characters …]\n{text[-tail:]}"
