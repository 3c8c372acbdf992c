"""How the local sandbox keeps every other process out of its commands' sight,
and the one line that says why it cannot.

A command run as the host's user could read the environment of any process
of that user that did not hide itself: Neo hides itself, but not whatever
started it (`uv run`, a shell wrapper, a service manager), which holds the
same API key or App key. So the local sandbox's processes run in a PID
namespace of their own with a fresh /proc, where no process outside exists;
for a normal user, in a user namespace too (mounting a /proc takes a
privilege a normal user has only in a user namespace of its own), where
set-user-ID programs (sudo) give no privilege. util-linux's `unshare` makes
them; `local_init.py` checks the result from inside before anything runs
there. Root needs no user namespace: it keeps its power over files, and
loses what would let it see out.

Where the system forbids those namespaces (Ubuntu's AppArmor restriction
since 24.04, a container's seccomp profile) the local sandbox refuses to
start rather than run commands unguarded.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.sandbox import local_init
from runner.sandbox.base import SandboxError

# The namespaces and /proc of the sandbox; --kill-child ends it with unshare.
_NAMESPACES = ("--pid", "--fork", "--kill-child", "--mount-proc")
# Each setting that forbids a normal user's namespaces: its value then, and
# what it means.
SYSCTLS: tuple[tuple[str, str, str], ...] = (
    (
        "kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "AppArmor forbids unprivileged user namespaces here",
    ),
    ("kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are disabled here"),
    ("user/max_user_namespaces", "0", "user namespaces are disabled here"),
)


class SandboxUnavailable(SandboxError):
    """The local sandbox cannot hide other processes on this system: `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(refusal(reason))
        self.reason = reason


def init_argv(unshare: str, euid: int, python: str, root: str) -> list[str]:
    """The command line that starts the sandbox's init for the tree `root`."""
    user = () if euid == 0 else ("--map-current-user",)
    return [unshare, *user, *_NAMESPACES, "--", python, "-I", local_init.__file__, root]


def refusal(reason: str, instead: str = "--sandbox docker") -> str:
    """The one line refusing the local sandbox; `instead` is how to choose docker."""
    return (
        f"the local sandbox cannot hide other processes from its commands ({reason}); use {instead}"
    )


def why_not(stderr: bytes, euid: int, sysctls: Mapping[str, str]) -> str:
    """Why an init that never became ready, having written `stderr`, failed."""
    if euid != 0:
        for name, value, meaning in SYSCTLS:
            if sysctls.get(name) == value:
                return f"{meaning}: {name.replace('/', '.')}={value}"
    said = next((line for line in stderr.decode(errors="replace").splitlines() if line), "")
    return " ".join(said.split())[:300] or "its init exited before it was ready"


def read_sysctls(names: Sequence[str] | None = None) -> dict[str, str]:
    """The values of `names` (under /proc/sys) this system has."""
    found = {}
    for name in names or [name for name, _, _ in SYSCTLS]:
        try:
            found[name] = Path("/proc/sys", name).read_text().strip()
        except OSError:
            continue
    return found


def sandbox_command(root: str) -> list[str]:
    """The init's command line on this host; SandboxUnavailable when it has none."""
    if sys.platform != "linux":
        raise SandboxUnavailable("it needs Linux namespaces")
    unshare = shutil.which("unshare")
    if unshare is None:
        raise SandboxUnavailable("util-linux's unshare is not on PATH")
    return init_argv(unshare, os.geteuid(), sys.executable, root)
