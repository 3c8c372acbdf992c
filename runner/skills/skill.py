"""A skill and its SKILL.md: the front matter's rules, checked (pure).

A skill is a folder whose SKILL.md starts with YAML front matter naming it
and saying when to use it; the rest of the file is its instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

import yaml

__all__ = [
    "FILENAME",
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "MAX_SKILL_BYTES",
    "Skill",
    "Skipped",
    "Source",
    "parse_skill",
]

FILENAME: Final = "SKILL.md"
MAX_NAME: Final = 64
MAX_DESCRIPTION: Final = 1024
# A skill's body is read into the first message when invoked: one this large
# is already a long read; a larger file is more likely a mistake.
MAX_SKILL_BYTES: Final = 64 * 1024
# Lowercase words joined by single hyphens; a letter first, so `$5` is never a skill.
_NAME_RE: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

Source = Literal["repository", "builtin"]


@dataclass(frozen=True, slots=True)
class Skill:
    """One usable skill: found at `origin`; `path` is where read_file reads it."""

    name: str
    description: str
    origin: str
    path: str
    body: str
    source: Source


@dataclass(frozen=True, slots=True)
class Skipped:
    """A SKILL.md (or folder) not used, and the one-line reason."""

    path: str
    reason: str


def parse_skill(data: bytes, *, folder: str, path: str, source: Source) -> Skill | Skipped:
    """The skill in `data`, the SKILL.md at `path` in folder `folder`; or why it is skipped."""
    if len(data) > MAX_SKILL_BYTES:
        return Skipped(path, f"larger than {MAX_SKILL_BYTES // 1024} KiB ({len(data)} bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Skipped(path, "not valid UTF-8")
    split = _split(text)
    if isinstance(split, str):
        return Skipped(path, split)
    header, body = split
    try:
        meta = yaml.safe_load(header)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return Skipped(path, f"front matter is not valid YAML{where}")
    if not isinstance(meta, dict):
        return Skipped(path, "front matter is not a mapping of keys to values")
    problem = _check(meta, folder)
    if problem:
        return Skipped(path, problem)
    if not body.strip():
        return Skipped(path, "no instructions after the front matter")
    description = " ".join(meta["description"].split())
    return Skill(meta["name"], description, path, path, body.strip(), source)


def _split(text: str) -> tuple[str, str] | str:
    """(front matter, body), or what is wrong with the file's shape."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return "no front matter: the file must start with a line '---'"
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return "front matter is not closed by a line '---'"


def _check(meta: dict[object, object], folder: str) -> str:
    name = meta.get("name")
    description = meta.get("description")
    if name is None or name == "":
        return "front matter has no `name`"
    if not isinstance(name, str):
        return f"`name` must be text, got {type(name).__name__}"
    if len(name) > MAX_NAME:
        return f"name is longer than {MAX_NAME} characters"
    if not _NAME_RE.fullmatch(name):
        return (
            f"name {name!r} is not kebab-case (lowercase letters, digits and single"
            " hyphens, a letter first)"
        )
    if name != folder:
        return f"name {name!r} does not match its folder {folder!r}"
    if description is None or (isinstance(description, str) and not description.strip()):
        return "front matter has no `description`"
    if not isinstance(description, str):
        return f"`description` must be text, got {type(description).__name__}"
    if len(description) > MAX_DESCRIPTION:
        return f"description is longer than {MAX_DESCRIPTION} characters"
    # One line in the prompt and on a terminal: no escape sequences in it.
    if any(not char.isprintable() and not char.isspace() for char in description):
        return "description has control characters"
    return ""
