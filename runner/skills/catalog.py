"""The skills segment of the system prompt: one line per skill (pure).

Sorted and built from the skills alone, so its bytes are the same on every
call and the prompt's prefix stays cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from runner.skills.skill import Skill

__all__ = ["HEADING", "MAX_CATALOG_BYTES", "catalog"]

HEADING: Final = "# Skills"
MAX_CATALOG_BYTES: Final = 8 * 1024
_INTRO: Final = (
    "Skills are instructions for recurring tasks, written once. Each line is a"
    " skill's name, when to use it, and its SKILL.md. When a task matches a skill,"
    " read its SKILL.md with read_file before you start and follow it."
)


def catalog(skills: Sequence[Skill], *, limit: int = MAX_CATALOG_BYTES) -> str:
    """The segment for `skills`, at most `limit` UTF-8 bytes; empty when there are none.

    Lines that do not fit are left out whole, and a last line says how many.
    """
    if not skills:
        return ""
    lines = [HEADING, "", _INTRO, ""]
    size = len("\n".join(lines).encode())
    ordered = sorted(skills, key=lambda skill: skill.name)
    shown = 0
    for index, skill in enumerate(ordered):
        line = f"- {skill.name} — {skill.description} ({skill.path})"
        left = len(ordered) - index - 1
        # Room is kept for the marker whenever a line may be followed by one.
        reserve = len(_more(left + 1).encode()) + 1 if left else 0
        if size + len(line.encode()) + 1 + reserve > limit:
            break
        lines.append(line)
        size += len(line.encode()) + 1
        shown += 1
    if shown < len(ordered):
        lines.append(_more(len(ordered) - shown))
    return "\n".join(lines)


def _more(count: int) -> str:
    return f"- ... and {count} more not listed (the catalog is capped at 8 KiB)"
