"""Skills: instructions for recurring tasks, found, listed in the prompt and invoked.

The loop knows nothing of them: they reach it through the system prompt's
catalog, the first message and read_file (docs/architecture.md, "Skills").
"""

from runner.skills.catalog import catalog
from runner.skills.discovery import (
    REPOSITORY_DIRS,
    VIRTUAL_ROOT,
    Discovery,
    builtin_skills,
    discover,
    merge,
    ref_skills,
    tree_skills,
)
from runner.skills.expansion import NOTICE, SkillsInvoked, invocation_text, invoked
from runner.skills.listing import listing
from runner.skills.per_run import RunSkills, run_skills
from runner.skills.reading import SkillReader, with_skill_reads
from runner.skills.skill import Skill, Skipped, parse_skill

__all__ = [
    "NOTICE",
    "REPOSITORY_DIRS",
    "VIRTUAL_ROOT",
    "Discovery",
    "RunSkills",
    "Skill",
    "SkillReader",
    "SkillsInvoked",
    "Skipped",
    "builtin_skills",
    "catalog",
    "discover",
    "invocation_text",
    "invoked",
    "listing",
    "merge",
    "parse_skill",
    "ref_skills",
    "run_skills",
    "tree_skills",
    "with_skill_reads",
]
