import contextlib
import json
import logging
import socket
import subprocess
import time

import docker
import pytest
from docker.errors import NotFound

from bot.worker import pool
from runner.network.proxy import LABEL_EGRESS
from runner.sandbox.docker import LABEL_JOB
from runner.sandbox.owners import LABEL_OWNER, LABEL_STARTED
from tests.runner.network.conftest import docker_client, egress_image

__all__ = ["docker_client", "egress_image"]


class _Silent(Exception):
    """An error whose text is empty, as some of docker's transport errors are."""

    def __str__(self) -> str:
        return ""


def test_a_sweep_that_fails_without_a_message_logs_one_line_and_start_up_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreachable(*args: object, **kwargs: object) -> docker.DockerClient:
        raise _Silent

    monkeypatch.setattr(docker, "from_env", unreachable)
    with caplog.at_level(logging.WARNING, logger="neo.worker"):
        pool.sweep_sandbox_orphans()
    [record] = caplog.records
    assert json.loads(record.getMessage()) == {"event": "sweep_skipped", "reason": "_Silent"}


def test_a_restarted_worker_removes_a_dead_ones_proxy_and_its_volume(
    docker_client: docker.DockerClient, egress_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Its worker is gone: a process of this host that ended.
    dead = subprocess.Popen(["true"])
    dead.wait(60)
    labels = {
        LABEL_EGRESS: "1",
        LABEL_JOB: "test-pool-sweep",
        LABEL_STARTED: str(int(time.time())),
        LABEL_OWNER: f"{socket.gethostname()}:{dead.pid}",
    }
    api = docker_client.api
    volume = str(api.create_volume(labels=labels)["Name"])
    container = str(api.create_container(egress_image, labels=labels)["Id"])
    try:
        with caplog.at_level(logging.INFO, logger="neo.worker"):
            pool.sweep_sandbox_orphans()
        left = api.containers(all=True, filters={"label": f"{LABEL_JOB}=test-pool-sweep"})
        volumes = api.volumes(filters={"label": f"{LABEL_JOB}=test-pool-sweep"})["Volumes"]
    finally:
        with contextlib.suppress(NotFound):
            api.remove_container(container, force=True)
        with contextlib.suppress(NotFound):
            api.remove_volume(volume)

    assert left == []
    assert not volumes
    [record] = [r for r in caplog.records if "swept_orphans" in r.getMessage()]
    assert volume in json.loads(record.getMessage())["containers"]
