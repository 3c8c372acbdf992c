"""Finding skills: the repository's folders, a branch of it, and the built-ins.

Repository folders in precedence order (`REPOSITORY_DIRS`), then built-ins;
the first skill of a name wins. Links out of the repository are refused,
never followed: the host reads these files before the model sees them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Final

from runner import git as host_git
from runner.skills.skill import FILENAME, MAX_SKILL_BYTES, Skill, Skipped, parse_skill

__all__ = [
    "BUILTIN_DIR",
    "REPOSITORY_DIRS",
    "VIRTUAL_ROOT",
    "Discovery",
    "builtin_skills",
    "discover",
    "merge",
    "ref_skills",
    "tree_skills",
    "virtual_path",
]

# Where a repository keeps its skills, the first winning a clash of names:
# Neo's own folder, the cross-agent one, then Claude Code's.
REPOSITORY_DIRS: Final = (".neo/skills", ".agents/skills", ".claude/skills")
BUILTIN_DIR: Final = Path(__file__).parent / "builtin"
# Skills not in the working tree (built-ins, a default branch's) are served to
# read_file under this absolute path, which no repository file can have.
VIRTUAL_ROOT: Final = "/neo/skills"
# Folders looked at per directory: a bound on what a huge tree costs.
MAX_FOLDERS: Final = 200


@dataclass(frozen=True, slots=True)
class Discovery:
    """The skills a run sees, sorted by name, and what was passed over and why."""

    skills: tuple[Skill, ...] = ()
    skipped: tuple[Skipped, ...] = ()


def virtual_path(name: str) -> str:
    return f"{VIRTUAL_ROOT}/{name}/{FILENAME}"


def merge(found: Iterable[Skill | Skipped], *, disabled: Iterable[str] = ()) -> Discovery:
    """The first skill of each name, in `found`'s order; the rest with their reasons (pure)."""
    off = frozenset(disabled)
    kept: dict[str, Skill] = {}
    skipped: list[Skipped] = []
    for each in found:
        if isinstance(each, Skipped):
            skipped.append(each)
        elif each.name in off:
            skipped.append(
                Skipped(each.origin, f"{each.name!r} is disabled (disabled_skills or --no-skill)")
            )
        elif each.name in kept:
            winner = kept[each.name].origin
            skipped.append(Skipped(each.origin, f"{each.name!r} is already defined by {winner}"))
        else:
            kept[each.name] = each
    skills = tuple(sorted(kept.values(), key=lambda skill: skill.name))
    return Discovery(skills, tuple(skipped))


def builtin_skills() -> list[Skill | Skipped]:
    """The skills shipped in this package, each read at its virtual path."""
    found: list[Skill | Skipped] = []
    for folder in sorted(BUILTIN_DIR.iterdir()):
        if not (folder / FILENAME).is_file():
            continue
        origin = f"built-in {folder.name}"
        each = parse_skill(
            (folder / FILENAME).read_bytes(), folder=folder.name, path=origin, source="builtin"
        )
        found.append(_virtual(each) if isinstance(each, Skill) else each)
    return found


def tree_skills(root: Path) -> list[Skill | Skipped]:
    """The skills in the working tree `root`, in precedence order; read_file reads them in place."""
    top = root.resolve()
    found: list[Skill | Skipped] = []
    for directory in REPOSITORY_DIRS:
        try:
            # Resolved before anything is read: `.agents` itself may be the link.
            real = (root / directory).resolve()
            if not real.is_relative_to(top):
                found.append(Skipped(directory, "it links outside the repository"))
                continue
            if not real.is_dir():
                continue
            folders = sorted(os.listdir(real))[:MAX_FOLDERS]
        except (OSError, RuntimeError) as error:
            found.append(Skipped(directory, _unreadable(error)))
            continue
        for folder in folders:
            shown = f"{directory}/{folder}"
            try:
                found.extend(_folder(top, real / folder, shown))
            except (OSError, RuntimeError) as error:
                found.append(Skipped(shown, _unreadable(error)))
    return found


def _unreadable(error: OSError | RuntimeError) -> str:
    # pathlib reports a loop of links as a RuntimeError.
    if isinstance(error, RuntimeError):
        return "a loop of symbolic links"
    return f"unreadable: {error.strerror or type(error).__name__}"


def _folder(top: Path, folder: Path, shown: str) -> list[Skill | Skipped]:
    """The folder's skill, or why not; raises OSError or RuntimeError (a link loop)."""
    real = folder.resolve()
    if not real.is_relative_to(top):
        return [Skipped(shown, "it links outside the repository")]
    if not real.is_dir():
        return []  # a stray file beside the skills: not a skill
    path = f"{shown}/{FILENAME}"
    file = real / FILENAME
    if not file.exists() and not file.is_symlink():
        return [Skipped(shown, f"no {FILENAME} in the folder")]
    target = file.resolve()
    if not target.is_relative_to(top):
        return [Skipped(path, "it links outside the repository")]
    if not target.is_file():
        return [Skipped(path, "not a regular file")]
    with target.open("rb") as handle:
        data = handle.read(MAX_SKILL_BYTES + 1)
    return [parse_skill(data, folder=folder.name, path=path, source="repository")]


async def ref_skills(tree: Path, ref: str, *, label: str | None = None) -> list[Skill | Skipped]:
    """The skills at git `ref` of the repository in `tree`, served at virtual paths.

    A pull request job reads them from the default branch, so the pull
    request cannot rewrite them. Symbolic links are refused unread. Notes
    name the ref as `label` (default: `ref`).
    """
    listed = await host_git.run_local(
        tree, "ls-tree", "-r", "-l", "-z", "--full-tree", ref, "--", *REPOSITORY_DIRS
    )
    entries: list[tuple[str, str, str, str]] = []
    for record in listed.decode(errors="replace").split("\0"):
        head, _, path = record.partition("\t")
        fields = head.split()
        if len(fields) == 4 and fields[1] == "blob":
            mode, _kind, obj, size = fields
            entries.append((mode, obj, size, path))
    found: list[Skill | Skipped] = []
    for directory in REPOSITORY_DIRS:
        for mode, obj, size, path in entries:
            shown = f"{path} on {label or ref}"
            parts = _parts(path, directory)
            if parts is None:
                continue
            if mode == "120000":
                # A link in git is a path to follow on checkout: never followed here.
                if len(parts) < 2 or parts[1] == FILENAME:
                    found.append(Skipped(shown, "a symbolic link, not followed"))
            elif len(parts) != 2 or parts[1] != FILENAME:
                continue
            elif not size.isdigit() or int(size) > MAX_SKILL_BYTES:
                found.append(Skipped(shown, f"larger than {MAX_SKILL_BYTES // 1024} KiB"))
            else:
                data = await host_git.run_local(tree, "cat-file", "blob", obj)
                each = parse_skill(data, folder=parts[0], path=shown, source="repository")
                found.append(_virtual(each) if isinstance(each, Skill) else each)
    return found


def _parts(path: str, directory: str) -> tuple[str, ...] | None:
    """`path`'s parts below `directory` (none for the directory itself), or None if not in it."""
    if path == directory:
        return ()
    if not path.startswith(directory + "/"):
        return None
    return PurePosixPath(path).relative_to(directory).parts


def _virtual(skill: Skill) -> Skill:
    return replace(skill, path=virtual_path(skill.name))


def discover(found: Sequence[Skill | Skipped], *, disabled: Iterable[str] = ()) -> Discovery:
    """`found` (the repository's) and the built-ins, merged: the repository's win."""
    return merge([*found, *builtin_skills()], disabled=disabled)
