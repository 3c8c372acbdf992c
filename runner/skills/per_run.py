"""One run's skills: its catalog, what its request invokes, and its first message (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.agent.events import ToolNotice
from runner.skills.catalog import catalog
from runner.skills.discovery import Discovery, discover
from runner.skills.expansion import NOTICE, SkillsInvoked, invocation_text, invoked
from runner.skills.skill import Skill, Skipped

__all__ = ["RunSkills", "run_skills"]


@dataclass(frozen=True, slots=True)
class RunSkills:
    discovery: Discovery
    invoked: tuple[Skill, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(skill.name for skill in self.invoked)

    @property
    def catalog(self) -> str:
        return catalog(self.discovery.skills)

    def first_message(self, prompt: str) -> str:
        """`prompt` with the invoked skills' instructions after it."""
        added = invocation_text(self.invoked)
        return f"{prompt}\n\n{added}" if added else prompt

    def notice(self) -> ToolNotice:
        """The event that labels the turn with the invoked skills."""
        return ToolNotice("", NOTICE, SkillsInvoked(self.names))


def run_skills(
    found: Sequence[Skill | Skipped], *, request: str, disabled: Iterable[str] = ()
) -> RunSkills:
    """The skills of a run that found `found` in the repository; `request` is the
    requester's own text, the only text whose `$name` and `/name` invoke one."""
    discovery = discover(found, disabled=disabled)
    return RunSkills(discovery, invoked(request, discovery.skills))
