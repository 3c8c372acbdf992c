"""tests/processes.py: a process is known by its pid and its start time or command line."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.processes import Process, wait_gone


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def test_a_running_process_is_alive_by_either_identity(
    sleeper: subprocess.Popen[bytes],
) -> None:
    assert Process.seen(sleeper.pid).alive()
    assert Process.running(sleeper.pid, ["sleep", "300"]).alive()


def test_a_killed_process_is_gone_once_a_zombie_and_once_reaped(
    sleeper: subprocess.Popen[bytes],
) -> None:
    seen = Process.seen(sleeper.pid)
    sleeper.kill()
    # Not reaped yet: a zombie runs no more.
    assert wait_gone(seen)
    assert wait_gone(Process.running(sleeper.pid, ["sleep", "300"]))
    sleeper.wait()
    assert not seen.alive()


def test_another_process_under_the_pid_is_not_it(sleeper: subprocess.Popen[bytes]) -> None:
    # What a reused pid looks like: started at another time, or running something else.
    assert not Process(sleeper.pid, started="0").alive()
    assert not Process.running(os.getpid(), ["sleep", "300"]).alive()
