"""The first process of the local sandbox: checks that its namespaces hide
every other process, then is their init while the exec server runs.

A standalone script (standard library only; it never imports Neo) that
`unshare` starts as pid 1 of a new PID namespace with a fresh /proc
(`runner.sandbox.isolation` builds that command line). It

- goes no further unless /proc shows no process but itself and no other
  proc filesystem shows one outside the namespace (a host may have mounted
  one elsewhere): it writes why, on stdout where the exec server's ready
  line would be, and exits;
- as root, takes out of the bounding set the capabilities that would undo
  that or read another process's memory, so no command gets them, through
  sudo or any set-user-ID program either (a normal user's commands never
  have them: its namespace has no capability once the exec server starts);
- forks the exec server, and reaps every process orphaned in the namespace
  until the exec server exits; then it exits too, and the kernel kills
  everything still in the namespace, `setsid` and double-forked daemons
  included.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import runpy
import sys
from collections.abc import Iterator

# CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE, CAP_SYS_ADMIN (mount, unmount,
# setns), CAP_PERFMON, CAP_BPF: each lets root undo the fresh /proc or read
# other processes' memory. Taken out of the bounding set, no exec gives them back.
DROPPED_CAPS = (16, 17, 19, 21, 38, 39)
PR_CAPBSET_DROP = 24
# A mount point in /proc/self/mountinfo escapes space, tab, newline and backslash.
_ESCAPE = re.compile(rb"\\([0-7]{3})")


def proc_mounts(mountinfo: bytes) -> Iterator[str]:
    """The mount points of the proc filesystems in `mountinfo`'s text."""
    for line in mountinfo.splitlines():
        fields, _, rest = line.partition(b" - ")
        parts = fields.split()
        if len(parts) > 4 and rest.split(b" ", 1)[0] == b"proc":
            point = _ESCAPE.sub(lambda match: bytes([int(match.group(1), 8)]), parts[4])
            yield os.fsdecode(point)


def outside_view() -> str | None:
    """Why this namespace does not hide the host's processes; None when it does."""
    if os.getpid() != 1:
        return "it did not get a PID namespace of its own"
    others = [name for name in os.listdir("/proc") if name.isdigit() and name != "1"]
    if others:
        return f"/proc shows {len(others)} processes besides its own"
    with open("/proc/self/mountinfo", "rb") as handle:
        points = sorted(set(proc_mounts(handle.read())))
    for point in points:
        try:
            # `self` is this process as that proc filesystem's namespace numbers it.
            seen_as = os.readlink(os.path.join(point, "self"))
        except OSError:
            # Covered by another mount, or unreadable to this process: then to
            # the commands too, which never have more privilege than it has.
            continue
        if seen_as != "1":
            return f"the proc filesystem mounted at {point} shows the host's processes"
    return None


def drop_capabilities() -> None:
    """Without the privilege to drop them (not root), the commands never had them."""
    with contextlib.suppress(Exception):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        for cap in DROPPED_CAPS:
            prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


def reap_until(child: int) -> int:
    """Reap every process that ends in the namespace; `child`'s exit status."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def main(argv: list[str]) -> None:
    problem = outside_view()
    if problem is not None:
        error = {"type": "isolation", "message": problem}
        sys.stdout.write(json.dumps({"id": 0, "ok": False, "error": error}) + "\n")
        sys.stdout.flush()
        sys.exit(1)
    drop_capabilities()
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_server.py")
    child = os.fork()
    if child == 0:
        sys.argv = [server, *argv[1:]]
        runpy.run_path(server, run_name="__neo_agent__")
        sys.exit(0)
    # Pid 1 ignores the signals it has no handler for, from inside the
    # namespace: a command cannot end it, only the exec server's exit does.
    os._exit(reap_until(child))


if __name__ == "__main__":
    main(sys.argv)
