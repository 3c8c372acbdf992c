"""`orphaned`: a job's private image outlives its job once its runner is gone,
and a pid given to a new process since does not keep it."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import replace

from runner.sandbox.owners import process_identity
from runner.sandbox.prepared import Entry
from runner.sandbox.preparing import orphaned


def private(owner: str, process: str | None) -> Entry:
    now = time.time()
    return Entry(
        image_id="sha256:private",
        reference="neo-env:job-x",
        repository="octo/repo",
        created=now,
        last_used=now,
        size=0,
        job="job-x",
        owner=owner,
        owner_process=process,
    )


def test_an_image_of_this_runner_is_kept() -> None:
    here = f"{socket.gethostname()}:{os.getpid()}"

    assert not orphaned(private(here, process_identity(os.getpid())))
    assert not orphaned(private(here, None))  # an image labelled before identities


def test_an_image_whose_runner_exited_goes_though_its_pid_is_a_new_process_s() -> None:
    probe = subprocess.Popen(["sleep", "300"])
    identity = process_identity(probe.pid)
    assert identity is not None
    probe.kill()
    probe.wait()

    # Its pid, now this (living) process's: the identity tells them apart.
    reused = f"{socket.gethostname()}:{os.getpid()}"
    assert orphaned(private(reused, identity))
    assert orphaned(private(f"{socket.gethostname()}:{probe.pid}", identity))


def test_another_host_s_image_goes_by_its_age() -> None:
    young = private("another-host:1", "4026531836:1")
    old = replace(young, created=time.time() - 7 * 3600)

    assert not orphaned(young)
    assert orphaned(old)
