"""Whose a labelled container is, and whether its runner still lives: what the sweeps decide by."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from runner.sandbox.owners import (
    LABEL_OWNER,
    LABEL_PROCESS,
    LABEL_STARTED,
    is_orphan,
    owner_labels,
    process_alive,
    process_identity,
)


def _alive(pid: int, process: str | None) -> bool | None:
    """pid 10 runs, started at tick 100, in namespace `ns`; nothing else does."""
    if process is not None:
        namespace, _, start = process.partition(":")
        return None if namespace != "ns" else pid == 10 and start == "100"
    return pid == 10


@pytest.mark.parametrize(
    ("labels", "orphan"),
    [
        ({LABEL_STARTED: "1000", LABEL_OWNER: "here:10"}, False),
        ({LABEL_STARTED: "1000", LABEL_OWNER: "here:20"}, True),  # its runner is gone
        ({LABEL_STARTED: "1000", LABEL_OWNER: "there:20"}, False),  # not this host's
        ({LABEL_STARTED: "-5000", LABEL_OWNER: "here:10"}, False),  # old, but its runner lives
        ({LABEL_STARTED: "-5000", LABEL_OWNER: "there:10"}, True),  # another host's, too old
        ({LABEL_STARTED: "soon", LABEL_OWNER: "here:x"}, False),  # unreadable: kept
        ({}, False),
        # The same process: kept, however old.
        ({LABEL_STARTED: "-5000", LABEL_OWNER: "here:10", LABEL_PROCESS: "ns:100"}, False),
        # A later process under the same pid (a restarted container's worker):
        # what the dead one left is an orphan at once.
        ({LABEL_STARTED: "1000", LABEL_OWNER: "here:10", LABEL_PROCESS: "ns:99"}, True),
        # Another PID namespace under the same host name: judged by age alone.
        ({LABEL_STARTED: "1000", LABEL_OWNER: "here:10", LABEL_PROCESS: "other:100"}, False),
        ({LABEL_STARTED: "-5000", LABEL_OWNER: "here:20", LABEL_PROCESS: "other:1"}, True),
    ],
)
def test_is_orphan(labels: dict[str, str], orphan: bool) -> None:
    assert is_orphan(labels, host="here", now=1000, max_age=3600, alive=_alive) is orphan


def test_a_runner_labels_itself_with_its_process() -> None:
    labels = owner_labels()

    assert labels[LABEL_OWNER] == f"{socket.gethostname()}:{os.getpid()}"
    assert labels[LABEL_PROCESS] == process_identity(os.getpid())
    assert process_alive(os.getpid(), labels[LABEL_PROCESS]) is True


def test_a_later_process_under_the_same_pid_is_not_the_owner() -> None:
    namespace, _, start = process_identity(os.getpid()).partition(":")  # type: ignore[union-attr]

    assert process_alive(os.getpid(), f"{namespace}:{int(start) - 1}") is False
    # Another namespace's process: this one cannot tell.
    assert process_alive(os.getpid(), f"0:{start}") is None


def test_a_process_that_ended_is_not_alive() -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    pid = int(ended.stdout)
    identity = f"{process_identity(os.getpid()).partition(':')[0]}:1"  # type: ignore[union-attr]

    assert process_alive(pid) is False
    assert process_alive(pid, identity) is False
