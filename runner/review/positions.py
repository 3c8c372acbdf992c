"""Where a unified diff can be commented on: (path, side, line) for every line of its hunks.

Pure. GitHub accepts a review comment on a line of a hunk: RIGHT for added and
context lines (the new file's numbering), LEFT for removed and context lines
(the old file's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Position", "Side", "changed_files", "commentable"]

Side = Literal["LEFT", "RIGHT"]

_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, slots=True, order=True)
class Position:
    path: str
    side: Side
    line: int


def _new_path(header: str) -> str | None:
    """The path of a `+++ b/path` line; None for a deleted file's `/dev/null`."""
    name = header[4:].split("\t", 1)[0]
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith("b/") else name


def _old_path(header: str) -> str | None:
    name = header[4:].split("\t", 1)[0]
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith("a/") else name


def commentable(diff: str) -> frozenset[Position]:
    """Every position of `diff` a review comment may point at."""
    found: set[Position] = set()
    path: str | None = None
    old = new = 0
    in_hunk = False
    for raw in diff.splitlines():
        if raw.startswith("diff --git "):
            path, in_hunk = None, False
        elif not in_hunk and raw.startswith("--- "):
            path = _old_path(raw)
        elif not in_hunk and raw.startswith("+++ "):
            # A deleted file is commented on under its old path.
            path = _new_path(raw) or path
        elif (hunk := _HUNK.match(raw)) is not None:
            old, new, in_hunk = int(hunk[1]), int(hunk[2]), path is not None
        elif not in_hunk or path is None:
            continue
        elif raw.startswith("+"):
            found.add(Position(path, "RIGHT", new))
            new += 1
        elif raw.startswith("-"):
            found.add(Position(path, "LEFT", old))
            old += 1
        elif raw.startswith(" ") or raw == "":
            found.add(Position(path, "RIGHT", new))
            found.add(Position(path, "LEFT", old))
            old += 1
            new += 1
        elif raw.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            in_hunk = False  # the next file's extended header
    return frozenset(found)


def changed_files(diff: str) -> tuple[str, ...]:
    """The paths `diff` changes, in its order (a deleted file's old path)."""
    # A dict keeps the order and finds a path again in constant time: a diff
    # of a hundred thousand files is listed in a blink, not in hours.
    paths: dict[str, None] = {}
    old: str | None = None
    in_header = False
    for raw in diff.splitlines():
        if raw.startswith("diff --git "):
            in_header = True
        elif in_header and raw.startswith("--- "):
            old = _old_path(raw)
        elif in_header and raw.startswith("+++ "):
            path = _new_path(raw) or old
            if path is not None:
                paths.setdefault(path)
            in_header = False
        elif raw.startswith("@@"):
            in_header = False
    return tuple(paths)
