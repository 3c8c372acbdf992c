"""The processes as /proc shows them: who is whose child, and who holds a pipe.

For a test's report of what a process it waited on too long was doing (see
tests/bot/runs/conftest.py), and for ending that process and all it started.
A process is named "pid name", and "pid name fd" for an open descriptor.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Entry", "children", "descendants", "kill", "pipe_holders"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One process: its pid, its name (comm) and its command line."""

    pid: int
    name: str
    argv: bytes


def children() -> dict[int, list[Entry]]:
    """Every process, by its parent's pid."""
    found: dict[int, list[Entry]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # gone meanwhile
        # The parent's pid is the stat line's fourth field, after the name's ')'.
        parent = int(stat.rpartition(")")[2].split()[1])
        name = stat.partition("(")[2].rpartition(")")[0]
        found.setdefault(parent, []).append(Entry(int(entry.name), name, argv))
    return found


def descendants(pid: int) -> list[Entry]:
    """The processes under `pid`, its children's children included."""
    tree = children()
    found: list[Entry] = []
    parents = [pid]
    while parents:
        for child in tree.get(parents.pop(), []):
            found.append(child)
            parents.append(child.pid)
    return found


def pipe_holders(pid: int, fd: int = 0) -> list[str]:
    """The processes but `pid` that have the pipe `pid` has as `fd` open:
    "pid name fd", and "(this process)" after this one's (pids wrap around
    in a long run, so a pid alone may not tell)."""
    try:
        pipe = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return []
    found = []
    for entries in children().values():
        for other in entries:
            if other.pid == pid:
                continue
            with contextlib.suppress(OSError):
                for held in Path(f"/proc/{other.pid}/fd").iterdir():
                    with contextlib.suppress(OSError):
                        if os.readlink(held) == pipe:
                            this = " (this process)" if other.pid == os.getpid() else ""
                            found.append(f"{other.pid} {other.name} {held.name}{this}")
    return found


def kill(pids: list[int]) -> list[int]:
    """SIGKILL `pids`; those that were there to kill."""
    killed = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed
