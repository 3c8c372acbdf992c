"""The user's requests in a conversation, and the head a summary starts from. Pure.

A thread's session holds one request per job ("@neo fix X", then "@neo also
handle Y"), and any of them may sit in the part a summary replaces. So the
compacted head keeps them all: the earlier ones (newest first within
`cap_tokens`, the oldest shortened), then "Current request:" with the
latest, then the summary. Each is a text block of its own, labelled, so a
later compaction finds them again (`user_requests`) and none is lost however
many times a conversation is compacted.

A request is a user text block that is not one of Neo's own notes (those
start with "[Neo:": budgets, wrap-ups, continuations, a job's outcome).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runner.llm.types import Message, Text

__all__ = [
    "COMPACTED_MARK",
    "CURRENT_REQUEST",
    "compacted_head",
    "request_indexes",
    "request_texts",
    "shorten",
    "user_requests",
]

CURRENT_REQUEST = "Current request:"
# Opens the summary's block: what the compaction replaced, then the notes.
COMPACTED_MARK = "---\n[The conversation was compacted to fit the context window:"
_EARLIER = re.compile(r"\[Earlier request (\d+) of (\d+)[^\]\n]*\]\n")
_NOTE = "[Neo:"
# A shortened request keeps at least this much: its start and, mostly, its end
# (where a job's prompt says what to do).
_SHORTENED_CHARS = 600
_CHARS_PER_TOKEN = 4


def request_texts(message: Message) -> list[str]:
    """The requests in one message, oldest first (none in an assistant's)."""
    if message.role != "user":
        return []
    found: list[str] = []
    for block in message.content:
        if not isinstance(block, Text) or not block.text.strip():
            continue
        text = block.text
        if text.startswith((_NOTE, COMPACTED_MARK)):
            continue
        if earlier := _EARLIER.match(text):
            found.append(text[earlier.end() :])
        elif text.startswith(CURRENT_REQUEST + "\n\n"):
            found.append(text[len(CURRENT_REQUEST) + 2 :])
        elif (at := text.find("\n\n" + COMPACTED_MARK)) >= 0:
            # A head written before requests had blocks of their own: the task, then the notes.
            found.append(text[:at])
        else:
            found.append(text)
    return found


def user_requests(messages: Sequence[Message]) -> list[str]:
    """Every request in `messages`, oldest first, those an earlier head kept included."""
    return [text for message in messages for text in request_texts(message)]


def request_indexes(messages: Sequence[Message]) -> list[int]:
    """The indexes of the messages that hold a request."""
    return [i for i, message in enumerate(messages) if request_texts(message)]


def compacted_head(
    requests: Sequence[str], summary: str, dropped: int, *, cap_tokens: int
) -> Message:
    """The user message a summary starts from: every request, then the notes.

    The latest request is kept whole; the earlier ones share `cap_tokens`,
    the newest first, and those past it are shortened to their start and end.
    """
    *earlier, latest = requests or [""]
    room = cap_tokens * _CHARS_PER_TOKEN
    kept: list[str] = []
    for text in reversed(earlier):
        if len(text) <= room:
            kept.append(text)
            room -= len(text)
        else:
            kept.append(shorten(text, max(room, _SHORTENED_CHARS)))
            room = max(0, room - _SHORTENED_CHARS)
    count = len(earlier)
    blocks = [
        Text(f"[Earlier request {n} of {count}]\n{text}")
        for n, text in enumerate(reversed(kept), start=1)
    ]
    if latest:
        blocks.append(Text(f"{CURRENT_REQUEST}\n\n{latest}"))
    blocks.append(
        Text(
            f"{COMPACTED_MARK} {dropped} earlier messages were replaced by these notes,"
            " written from them. The requests above are the user's own words; the"
            " notes say what became of each. Files and command output are not repeated"
            f" here; read or run them again when you need them.]\n\n{summary.strip()}"
        )
    )
    return Message("user", tuple(blocks))


def shorten(text: str, chars: int) -> str:
    """`text` within about `chars` characters: its start and, at more length, its end."""
    if len(text) <= chars:
        return text
    head = chars // 3
    tail = chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut:,} characters of this request left out …]\n{text[-tail:]}"
