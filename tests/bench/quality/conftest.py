"""The sandbox image the benchmark's docker tests use: the suite's, with its toolchains."""

from __future__ import annotations

import os

import pytest
from docker.errors import ImageNotFound

from runner.sandbox.docker import docker_client


@pytest.fixture(scope="session")
def bench_image() -> str:
    """`neo-sandbox:local` (or $NEO_BENCH_IMAGE): Python with pytest, Node.js and Go."""
    image = os.environ.get("NEO_BENCH_IMAGE", "neo-sandbox:local")
    client = docker_client()
    try:
        client.images.get(image)
    except ImageNotFound:
        pytest.fail(f"{image} is missing: build it with scripts/build-images")
    finally:
        client.close()
    return image
