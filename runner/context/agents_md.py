"""AGENTS.md discovery: the repository's own instructions for agents.

Root to working directory, outermost first; CLAUDE.md or Copilot's
instructions when there is no AGENTS.md; capped (docs/architecture.md,
"The prompt").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

FILENAME: Final = "AGENTS.md"
# Read, in this order, when the repository's root has no AGENTS.md.
FALLBACKS: Final = ("CLAUDE.md", ".github/copilot-instructions.md")
HEADING: Final = "# Project instructions (AGENTS.md)"
_INTRO: Final = (
    "The repository provides these instructions, outermost directory first. The "
    "deepest AGENTS.md governs its directory: where files disagree, the one nearest "
    "to the file you change wins. Paths are from the repository root."
)
# Nested files listed by path: enough to show where the rules change.
MAX_LISTED: Final = 20
# A bound on the search for nested files, so a huge tree costs little.
MAX_DIRECTORIES: Final = 10_000
# Directories no project's own instructions live in: tools', dependencies'.
_PRUNED: Final = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding a `.git` directory or file.

    A `.git` file marks a worktree or submodule. The result is resolved.
    """
    here = start.resolve()
    for directory in (here, *here.parents):
        marker = directory / ".git"
        if marker.is_dir() or marker.is_file():
            return directory
    return None


def project_context(cwd: Path, *, limit: int = 32 * 1024) -> str:
    """The AGENTS.md files that apply to `cwd`, rendered for the system prompt.

    Empty when there are none. At most `limit` bytes of UTF-8; a truncated
    result ends with a marker giving how many bytes were left out.
    """
    here = cwd.resolve()
    root = find_git_root(here) or here
    found = [_read(root, directory / FILENAME) for directory in _directories(root, here)]
    if found[0] is None:
        found[:0] = [_read(root, root / name) for name in FALLBACKS]
    entries = [entry for entry in found if entry is not None]
    nested = _nested(root, here)
    if not entries and not nested:
        return ""
    sections = [HEADING, _INTRO, *nested, *(entry.render() for entry in entries)]
    return truncate("\n\n".join(sections), limit)


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, with a marker when cut.

    The cut never splits a character. The marker states the omitted and total
    byte counts and itself counts against `limit`.
    """
    data = text.encode("utf-8")
    total = len(data)
    if total <= limit:
        return text
    # Size the marker for the widest count it can show, so the real one fits.
    room = limit - len(_marker(total, total).encode("utf-8"))
    if room <= 0:
        return _marker(total, total).encode("utf-8")[: max(limit, 0)].decode("ascii", "ignore")
    keep = room
    while keep > 0 and data[keep] & 0xC0 == 0x80:  # a UTF-8 continuation byte
        keep -= 1
    return data[:keep].decode("utf-8") + _marker(total - keep, total)


def _marker(omitted: int, total: int) -> str:
    return f"\n\n[AGENTS.md truncated: {omitted} of {total} bytes omitted]"


@dataclass(frozen=True, slots=True)
class _Entry:
    relative: str
    content: str | None  # None when skipped; `note` says why
    note: str = ""

    def render(self) -> str:
        if self.content is None:
            return f"## {self.relative}\n\n(skipped: {self.note})"
        return f"## {self.relative}\n\n{self.content}"


def _directories(root: Path, cwd: Path) -> list[Path]:
    """`root`, then each directory below it on the way to `cwd`."""
    directories = [root]
    for part in cwd.relative_to(root).parts:
        directories.append(directories[-1] / part)
    return directories


def _nested(root: Path, cwd: Path) -> list[str]:
    """The section listing the AGENTS.md files below `cwd`, if any: sorted, capped."""
    paths: list[str] = []
    visited = 0
    # Sorted and pruned in place, so the walk (and where a cap cuts it) is
    # the same on every run: the prompt's bytes must not change.
    for directory, names, files in os.walk(cwd):
        visited += 1
        if visited > MAX_DIRECTORIES:
            break
        names[:] = sorted(n for n in names if not n.startswith(".") and n not in _PRUNED)
        if directory != str(cwd) and FILENAME in files:
            paths.append(Path(directory, FILENAME).relative_to(root).as_posix())
    if not paths:
        return []
    paths.sort()
    lines = [
        "Deeper directories have AGENTS.md files of their own, not shown here. Before you"
        " change files under one of these directories, read its AGENTS.md (and those"
        " between it and the root):"
    ]
    lines.extend(f"- {path}" for path in paths[:MAX_LISTED])
    if len(paths) > MAX_LISTED:
        lines.append(f"- ... and {len(paths) - MAX_LISTED} more")
    if visited > MAX_DIRECTORIES:
        lines.append(f"(The search stopped after {MAX_DIRECTORIES:,} directories.)")
    return ["\n".join(lines)]


def _read(root: Path, path: Path) -> _Entry | None:
    relative = path.relative_to(root).as_posix()
    try:
        if not path.exists() and not path.is_symlink():
            return None
        real = path.resolve()
        # The host reads this file before the model sees it: a link out of the
        # repository could smuggle any host file (credentials) into the prompt.
        if not real.is_relative_to(root):
            return _Entry(relative, None, "it links outside the repository")
        if not real.is_file():
            return _Entry(relative, None, "not a regular file")
        data = real.read_bytes()
    except OSError as exc:
        return _Entry(relative, None, f"unreadable: {exc.strerror or type(exc).__name__}")
    try:
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return _Entry(relative, None, "not valid UTF-8")
    content = content.strip()
    return _Entry(relative, content) if content else None
