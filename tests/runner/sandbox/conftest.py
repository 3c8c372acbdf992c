"""The Docker engine and sandbox image the docker sandbox tests run against.

They never skip: without an engine or an image they fail, saying what to run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound

# Another tag (NEO_TEST_SANDBOX_IMAGE) tries a changed Dockerfile's image
# without rebuilding the one every test uses.
SANDBOX_IMAGE = os.environ.get("NEO_TEST_SANDBOX_IMAGE") or "neo-sandbox:local"
REPO = Path(__file__).resolve().parents[3]
BUILD_IMAGES = REPO / "scripts" / "build-images"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[DockerClient]:
    """A client of the local engine, with `neo-sandbox:local` built."""
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as error:
        pytest.fail(
            f"the Docker engine is not reachable ({error}); start it with scripts/ensure-docker",
            pytrace=False,
        )
    try:
        client.images.get(SANDBOX_IMAGE)
    except ImageNotFound:
        _build_images()
    yield client
    client.close()


def _build_images() -> None:
    if not BUILD_IMAGES.exists():
        pytest.fail(
            f"{SANDBOX_IMAGE} is missing and scripts/build-images, which builds it, does not exist",
            pytrace=False,
        )
    built = subprocess.run(
        [str(BUILD_IMAGES)], capture_output=True, text=True, timeout=3600, check=False
    )
    if built.returncode != 0:
        output = (built.stdout + built.stderr)[-3000:]
        pytest.fail(f"scripts/build-images failed ({built.returncode}):\n{output}", pytrace=False)
