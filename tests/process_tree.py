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
    """Every other descriptor open on the pipe `pid` has as `fd` (the
    process's own others too): "pid name fd end", the end "r" or "w" (a
    reader sees the end of a pipe once no "w" is left), and "(this
    process)" after this one's (pids wrap around in a long run, so a pid
    alone may not tell)."""
    try:
        pipe = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return []
    found = []
    for entries in children().values():
        for other in entries:
            with contextlib.suppress(OSError):
                for held in Path(f"/proc/{other.pid}/fd").iterdir():
                    if (other.pid, held.name) == (pid, str(fd)):
                        continue
                    with contextlib.suppress(OSError):
                        if os.readlink(held) == pipe:
                            end = _end(other.pid, held.name)
                            this = " (this process)" if other.pid == os.getpid() else ""
                            found.append(f"{other.pid} {other.name} {held.name} {end}{this}")
    return found


def _end(pid: int, fd: str) -> str:
    """Which end of a pipe descriptor `fd` of `pid` is: "r" or "w" (its open flags)."""
    for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
        if line.startswith("flags:"):
            return "w" if int(line.split()[1], 8) & os.O_ACCMODE == os.O_WRONLY else "r"
    return "?"


def kill(pids: list[int]) -> list[int]:
    """SIGKILL `pids`; those that were there to kill."""
    killed = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed
