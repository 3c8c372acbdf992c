"""The plug point for a response cut at the output limit: go on, or fail closed.

The loop knows only this protocol; how many times to go on, how far to raise
`max_tokens` and what to tell the model is the caller's policy
(`runner/continuation.py` for jobs and `neo run`). Without one, a cut response
ends the turn with `MaxOutputTokens`, as the stop-reason table says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Continuation", "OutputLimit"]


@dataclass(frozen=True, slots=True)
class Continuation:
    """One more call after a cut response: with this `max_tokens`, after `note`."""

    max_tokens: int
    # A user message telling the model its response was cut, and how to go on.
    note: str


class OutputLimit(Protocol):
    def continuation(self, cuts: int, max_tokens: int) -> Continuation | None:
        """The `cuts`-th response in a row stopped at `max_tokens`: how to go on,
        or None to end the turn with `MaxOutputTokens`."""
        ...
