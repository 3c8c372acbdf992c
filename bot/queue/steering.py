"""Steering: words for a running (or queued) run, delivered at its next turn boundary.

Someone with write access asks a run to change course (`@neo steer ...`, or
the run page's Steer): the queue keeps the message until the worker running
the job takes it, between two model calls. Both backends implement
`Steering`; their tables are in steering_sqlite.py and steering_postgres.py.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Protocol

__all__ = ["MAX_STEER_CHARS", "Steer", "Steering", "check_steer"]

# A steer is a sentence or a paragraph; a comment may be 65,536 characters,
# and every one of them would be sent with each later model call.
MAX_STEER_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class Steer:
    """One message for a run, from a GitHub user (`author`, a login), at unix time `at`."""

    id: int
    job_id: int
    author: str
    text: str
    at: float


def check_steer(author: str, text: str) -> None:
    """Raise ValueError, one line, unless `text` is a steer `author` may leave."""
    if not author.strip():
        raise ValueError("a steer needs its author")
    if not text.strip():
        raise ValueError("a steer needs some text")
    if len(text) > MAX_STEER_CHARS:
        raise ValueError(f"a steer is at most {MAX_STEER_CHARS:,} characters")


class Steering(Protocol):
    """Steers kept for runs until their worker takes them."""

    async def steer(self, job_id: int, author: str, text: str) -> Steer | None:
        """Keep `text` for run `job_id`, durably, before it returns.

        None, and nothing kept, when the job is not a run that is queued or
        running. Raises ValueError when `check_steer` refuses the text.
        """
        ...

    async def take_steers(self, job_id: int) -> builtins.list[Steer]:
        """The steers kept for `job_id`, oldest first, and forget them.

        Each is delivered once: of two callers at once, only one gets it.
        """
        ...
