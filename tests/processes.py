"""Whether a process a test started has ended, when its pid may already be another's.

pid_max is 32,768 on these machines and the suite starts thousands of
processes, so the pid of a killed command can name a new process within
seconds. A process is known by its pid and what makes it that process: its
start time, when the test saw it alive, or else the command line it runs.
A zombie waiting for its parent to reap it runs no more.

A command in the local sandbox runs in a PID namespace of its own, where its
pid means another process on the host: it names a process with `NAME_LAST`
or `NAME_SELF` (its pid there and the namespace), and `Process.named` finds
that process on the host.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NAME_LAST", "NAME_SELF", "Process", "until_gone", "wait_gone"]

# Shell commands that print the last background process, or the shell itself,
# as `Process.named` reads it.
NAME_LAST = 'echo "$! $(readlink /proc/self/ns/pid)"'
NAME_SELF = 'echo "$$ $(readlink /proc/self/ns/pid)"'

# Up to 10 s: on a machine running the suite in four processes a signalled
# process can take longer than a second to be reaped.
_WAIT = 10.0
_STEP = 0.01


@dataclass(frozen=True, slots=True)
class Process:
    """One process: its pid, and its start time or its command line."""

    pid: int
    started: str | None = None
    argv: tuple[str, ...] | None = None

    @classmethod
    def seen(cls, pid: int) -> Process:
        """The process running now as `pid` (the test must know it runs)."""
        fields = _stat(pid)
        assert fields is not None, f"process {pid} is not running"
        assert fields[0] not in ("Z", "X"), f"process {pid} has ended"
        return cls(pid, started=fields[19])

    @classmethod
    def running(cls, pid: int, argv: Sequence[str]) -> Process:
        """The process `pid` if it runs `argv`: for one the test could not see alive."""
        return cls(pid, argv=tuple(argv))

    @classmethod
    def named(cls, name: str, argv: Sequence[str] | None = None) -> Process:
        """The process a sandboxed command named with NAME_LAST or NAME_SELF,
        running `argv` if given; one already gone is never alive."""
        pid, namespace = name.split()
        for host in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
            try:
                if os.readlink(f"/proc/{host}/ns/pid") != namespace:
                    continue
                status = Path(f"/proc/{host}/status").read_text()
            except OSError:
                continue
            # NSpid: its pid in each namespace, from the host's to its own.
            nspids = next(line for line in status.splitlines() if line.startswith("NSpid:"))
            fields = _stat(host)
            if nspids.split()[-1] != pid or fields is None:
                continue
            found = cls(host, started=fields[19])
            if argv is None or cls(host, argv=tuple(argv)).alive():
                return found
        return cls(0, started="gone")

    def alive(self) -> bool:
        fields = _stat(self.pid)
        if fields is None or fields[0] in ("Z", "X"):
            return False
        if self.started is not None:
            return fields[19] == self.started
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return False
        return tuple(part.decode() for part in cmdline.split(b"\0")[:-1]) == self.argv


def wait_gone(process: Process) -> bool:
    """Whether `process` ends within 10 s."""
    deadline = time.monotonic() + _WAIT
    while process.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(_STEP)
    return True


async def until_gone(process: Process) -> bool:
    """Whether `process` ends within 10 s, without blocking the event loop."""
    deadline = time.monotonic() + _WAIT
    while process.alive():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(_STEP)
    return True


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (the state first); None when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
