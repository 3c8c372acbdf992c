"""`$name` and `/name` in the requester's own words: the skills they invoke (pure).

A name counts only as a whole word of its own: `$5`, `src/release-notes`
and `/usr/bin` never match, and a name no skill has stays literal text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from runner.skills.skill import Skill

__all__ = ["NOTICE", "SkillsInvoked", "invocation_text", "invoked"]

# The name of the `ToolNotice` a run publishes its invoked skills under.
NOTICE: Final = "skills"


@dataclass(frozen=True, slots=True)
class SkillsInvoked:
    """The turn's label: the skills its request invoked, by name."""

    names: tuple[str, ...]


# After the start, a space or an opening bracket or quote; before the end, a
# space, a closing one or sentence punctuation not followed by more of a path.
_INVOCATION: Final = re.compile(
    r"(?:^|(?<=[\s(\[\"'`]))[$/]([a-z][a-z0-9]*(?:-[a-z0-9]+)*)"
    r"(?=$|[\s)\]\"'`,;:!?]|\.(?:\s|$))"
)


def invoked(text: str, skills: Sequence[Skill]) -> tuple[Skill, ...]:
    """The skills `text` invokes, in the order first named, each once."""
    known = {skill.name: skill for skill in skills}
    seen: dict[str, Skill] = {}
    for match in _INVOCATION.finditer(text):
        skill = known.get(match[1])
        if skill is not None and skill.name not in seen:
            seen[skill.name] = skill
    return tuple(seen.values())


def invocation_text(skills: Sequence[Skill]) -> str:
    """What the first message gains: each invoked skill's instructions, under its name."""
    if not skills:
        return ""
    parts = ["The request invokes these skills; follow their instructions:"]
    parts.extend(f'<skill name="{skill.name}">\n{skill.body}\n</skill>' for skill in skills)
    return "\n\n".join(parts)
