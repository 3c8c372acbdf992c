"""What the agent lacked: the `Needed:` lines of its summary, taken out (pure).

The system prompt asks the model to end its summary with a `Needed:` line for
each thing it could not do without: a tool or program that is not installed,
a permission, a network host, a secret. A maintainer can grant those, so the
report shows them on a line of their own rather than somewhere in the prose.
A line in a code block is the model quoting something, not asking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from runner.text import one_line

__all__ = ["MAX_NEEDS", "Needs", "split_needs"]

# More would be a model listing its whole plan, not what it lacked.
MAX_NEEDS: Final = 5
_MAX_CHARS: Final = 300
# "Needed: ...", also as a bullet or in bold ("**Needed:** ...", "- Needed: ...").
_NEEDED = re.compile(r"^\s{0,3}(?:[-*+]\s+)?(?:\*\*|__)?needed:?(?:\*\*|__)?:?\s+(\S.*)$", re.I)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Needs:
    """The summary without its `Needed:` lines, and what those lines asked for."""

    summary: str
    needed: tuple[str, ...] = ()


def split_needs(summary: str) -> Needs:
    """`summary`'s `Needed:` lines taken out, each one line (at most MAX_NEEDS kept)."""
    kept: list[str] = []
    needed: list[str] = []
    fence: str | None = None
    for line in summary.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence):
                fence = None
        elif opened:
            fence = opened[1]
        elif match := _NEEDED.match(line):
            what = one_line(match[1].strip().rstrip("*_ ").strip(), _MAX_CHARS)
            if what and what not in needed:
                needed.append(what)
            continue
        kept.append(line)
    if not needed:
        return Needs(summary)
    return Needs("\n".join(kept).strip("\n"), tuple(needed[:MAX_NEEDS]))
