"""Who started a container, and whether that runner still lives: what the sweeps decide by.

A runner labels what it starts (sandboxes, egress proxies, their volumes)
with its host and pid (`neo.owner`), and with the process itself
(`neo.owner.process`: its PID namespace and its start time in the host's
clock ticks). The pid alone is not enough: a worker in a container that
restarts (`docker restart`) comes back under the same host name and, as
tini's first child, the same pid, and would take its dead predecessor's
leftovers for its own forever. The start time tells the two apart; the
namespace says whether this process can judge at all (another container
under the same host name sees other processes under the same pids).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = [
    "LABEL_OWNER",
    "LABEL_PROCESS",
    "LABEL_STARTED",
    "is_orphan",
    "owner_label",
    "owner_labels",
    "process_alive",
    "process_identity",
]

LABEL_STARTED = "neo.started"
LABEL_OWNER = "neo.owner"
LABEL_PROCESS = "neo.owner.process"

# The fields of /proc/<pid>/stat after the command's closing parenthesis:
# the state is the first (field 3), the start time the 20th (field 22).
_STATE, _START = 0, 19


def owner_label() -> str:
    """This runner process, as the `neo.owner` label names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_labels() -> dict[str, str]:
    """The labels naming this runner process: `neo.owner`, and `neo.owner.process`
    where /proc tells (Linux)."""
    labels = {LABEL_OWNER: owner_label()}
    process = process_identity(os.getpid())
    if process is not None:
        labels[LABEL_PROCESS] = process
    return labels


def process_identity(pid: int) -> str | None:
    """`<PID namespace>:<start time>` of the process `pid` of this namespace; None
    when there is none (or no /proc)."""
    namespace = _namespace()
    fields = _stat(pid)
    if namespace is None or fields is None:
        return None
    return f"{namespace}:{fields[_START]}"


def is_orphan(
    labels: Mapping[str, str],
    *,
    host: str,
    now: float,
    max_age: float,
    alive: Callable[[int, str | None], bool | None],
) -> bool:
    """Whether a labelled container (or volume, or image) is left over.

    A runner on this host is asked directly (`alive`, given its pid and its
    `neo.owner.process`): what it started is an orphan once the process is
    gone, and never while it lives (a long job is no crash). A runner this
    process cannot ask (another host's, or another PID namespace's: `alive`
    says None) is judged by age: an orphan once older than `max_age`
    seconds, the longest a job may run.
    """
    owner_host, _, pid = labels.get(LABEL_OWNER, "").rpartition(":")
    if owner_host == host and pid.isdigit():
        living = alive(int(pid), labels.get(LABEL_PROCESS))
        if living is not None:
            return not living
    with contextlib.suppress(KeyError, ValueError):
        return now - float(labels[LABEL_STARTED]) > max_age
    return False


def process_alive(pid: int, process: str | None = None) -> bool | None:
    """Whether `pid` runs on this host (a zombie does not).

    With `process` (the `neo.owner.process` it was labelled with), whether
    that same process runs, not a later one given the same pid; None when
    `process` is of another PID namespace, whose processes this one cannot see.
    """
    if process is not None:
        namespace, _, start = process.partition(":")
        if namespace != _namespace():
            return None
        fields = _stat(pid)
        return fields is not None and fields[_START] == start and fields[_STATE] not in ("Z", "X")
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat(pid)
    return fields is None or fields[_STATE] not in ("Z", "X")


def _stat(pid: int) -> list[str] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > _START else None


def _namespace() -> str | None:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None
