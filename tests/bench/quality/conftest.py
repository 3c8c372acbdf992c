"""The sandbox image the benchmark's docker tests use: the suite's, with its toolchains.

The tasks' tests need Python's pytest, Node.js and Go in the image. The
suite's `neo-sandbox:local` carries them once the sandbox image ships its
toolchains; until then (or with $NEO_BENCH_IMAGE naming an image without
them) a layer with Debian's packages is built on top of it, once, and reused
while the image under it is the same.
"""

from __future__ import annotations

import fcntl
import io
import os

import pytest
from docker import DockerClient
from docker.errors import ContainerError, ImageNotFound

from bench.quality.taskset import Task, load_tasks
from runner.sandbox.docker import docker_client
from runner.sandbox.environment import container_environment, image_variables

_TOOLCHAINS = "command -v node && command -v go && python3 -m pytest --version"
_BRIDGE = "neo-sandbox-bench:local"
_BASE_LABEL = "neo.bench.base"
_DOCKERFILE = """\
FROM {base}
USER root
RUN apt-get update \\
    && apt-get install --yes --no-install-recommends python3-pytest nodejs golang-go \\
    && apt-get clean && rm -rf /var/lib/apt/lists/*
USER neo
"""


def _has_toolchains(client: DockerClient, image: str) -> bool:
    # Checked with the environment a sandbox's commands get: the sandbox's
    # pytest is its prepared environment's, on that PATH only.
    variables = image_variables(client.images.get(image).attrs["Config"].get("Env"))
    try:
        client.containers.run(
            image,
            ["bash", "-c", _TOOLCHAINS],
            environment=container_environment(variables),
            remove=True,
            network_mode="none",
        )
    except ContainerError:
        return False
    return True


def _bridge(client: DockerClient, base: str) -> str:
    """`base` with the toolchains added, built unless already built on this `base`."""
    base_id = client.images.get(base).id
    try:
        if client.images.get(_BRIDGE).labels.get(_BASE_LABEL) == base_id:
            return _BRIDGE
    except ImageNotFound:
        pass
    dockerfile = io.BytesIO(_DOCKERFILE.format(base=base).encode())
    client.images.build(fileobj=dockerfile, tag=_BRIDGE, labels={_BASE_LABEL: base_id}, rm=True)
    return _BRIDGE


@pytest.fixture(scope="session")
def bench_image() -> str:
    """`neo-sandbox:local` (or $NEO_BENCH_IMAGE), with pytest, Node.js and Go."""
    image = os.environ.get("NEO_BENCH_IMAGE", "neo-sandbox:local")
    client = docker_client()
    # One build for all the suite's processes: the others wait, then reuse it.
    with open("/tmp/neo-bench-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            client.images.get(image)
        except ImageNotFound:
            pytest.fail(f"{image} is missing: build it with scripts/build-images")
        if not _has_toolchains(client, image):
            image = _bridge(client, image)
        fcntl.flock(lock, fcntl.LOCK_UN)
    client.close()
    return image


@pytest.fixture(scope="session")
def one_task_per_language() -> list[Task]:
    """The first task of each language: the job path's tests run these.

    The harness's path (clone, sandbox, tools, commit, push, grading) is the
    same for every task of a language; whether each task of the set is sound
    is tests/bench/quality/test_check.py's, over the whole set.
    """
    first: dict[str, Task] = {}
    for task in load_tasks():
        first.setdefault(task.spec.language, task)
    return list(first.values())
