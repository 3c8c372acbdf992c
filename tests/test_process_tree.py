"""tests/process_tree.py: a process's children, the holders of its stdin, its kill."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.process_tree import children, descendants, kill, pipe_holders
from tests.processes import Process, wait_gone


@pytest.fixture
def shell() -> Iterator[subprocess.Popen[bytes]]:
    """A shell reading its stdin from this process, with a `sleep` under it."""
    process = subprocess.Popen(
        ["bash", "-c", "sleep 300 & echo $!; wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    yield process
    process.kill()
    process.wait()


def test_a_shell_s_sleep_is_its_descendant_and_both_are_this_process_s(
    shell: subprocess.Popen[bytes],
) -> None:
    assert shell.stdout is not None
    sleeper = int(shell.stdout.readline())

    assert [(entry.pid, entry.name) for entry in descendants(shell.pid)] == [(sleeper, "sleep")]
    mine = {entry.pid: entry for entry in children()[os.getpid()]}
    assert mine[shell.pid].argv.split(b"\0")[:2] == [b"bash", b"-c"]
    assert {entry.pid for entry in descendants(os.getpid())} >= {shell.pid, sleeper}


def test_the_holder_of_a_pipe_is_this_process_and_no_one_once_it_is_closed(
    shell: subprocess.Popen[bytes],
) -> None:
    assert shell.stdin is not None
    # The background sleep is not listed: bash gives it /dev/null for stdin.
    assert pipe_holders(shell.pid) == [
        f"{os.getpid()} {_name()} {shell.stdin.fileno()} w (this process)"
    ]
    shell.stdin.close()
    assert pipe_holders(shell.pid) == []


def test_kill_ends_what_it_names_and_says_which_were_there(
    shell: subprocess.Popen[bytes],
) -> None:
    assert shell.stdout is not None
    sleeper = Process.seen(int(shell.stdout.readline()))

    assert kill([sleeper.pid]) == [sleeper.pid]
    assert wait_gone(sleeper)
    # No pid is this high (the kernel's most is 2**22): nothing to kill.
    assert kill([(1 << 22) + 1]) == []


def test_a_process_without_that_descriptor_has_no_holders() -> None:
    assert pipe_holders(os.getpid(), fd=987654) == []


def _name() -> str:
    with open("/proc/self/stat") as stat:
        return stat.read().partition("(")[2].rpartition(")")[0]
