"""Image references: `image_problem` agrees with the Docker engine on what is one."""

from __future__ import annotations

import pytest
from docker import DockerClient
from docker.errors import APIError, ImageNotFound

from runner.sandbox.image import image_problem

DIGEST = "sha256:" + "0" * 64

REFERENCES = [
    pytest.param("neo-sandbox:local", True, id="name-and-tag"),
    pytest.param("ubuntu", True, id="bare-name"),
    pytest.param("ghcr.io/acme/sandbox:1.2", True, id="registry-path-tag"),
    pytest.param("localhost:5000/team/neo:v1_2.3-rc", True, id="registry-port"),
    pytest.param("localhost/neo", True, id="localhost"),
    pytest.param("Registry.Example.com/neo", True, id="uppercase-registry"),
    pytest.param(f"neo@{DIGEST}", True, id="digest"),
    pytest.param(f"neo:1@{DIGEST}", True, id="tag-and-digest"),
    pytest.param("team/a__b.c-d--e", True, id="separators"),
    pytest.param("neo:" + "t" * 128, True, id="tag-128-chars"),
    pytest.param("Neo-Sandbox:Local", False, id="uppercase-repository"),
    pytest.param("team/Neo", False, id="uppercase-path"),
    pytest.param("no such image!", False, id="spaces"),
    pytest.param("neo:", False, id="empty-tag"),
    pytest.param("neo:-x", False, id="tag-starts-with-dash"),
    pytest.param("neo:" + "t" * 129, False, id="tag-129-chars"),
    pytest.param("neo:a:b", False, id="two-tags"),
    pytest.param("neo@sha256:00", False, id="short-digest"),
    pytest.param("host:port/neo", False, id="non-numeric-port"),
    pytest.param("a___b", False, id="three-underscores"),
    pytest.param("a..b", False, id="two-dots"),
    pytest.param("neo-", False, id="trailing-dash"),
    pytest.param("_neo", False, id="leading-underscore"),
    pytest.param("x" * 256, False, id="name-256-chars"),
    pytest.param("-neo", False, id="leading-dash"),
]


@pytest.mark.parametrize(("reference", "valid"), REFERENCES)
def test_image_problem_agrees_with_the_engine(
    docker_client: DockerClient, reference: str, valid: bool
) -> None:
    status = 200
    try:
        docker_client.images.get(reference)
    except ImageNotFound:
        status = 404
    except APIError as error:
        status = error.status_code or 0

    # 400: "invalid reference format"; a valid name the engine lacks is 404.
    assert status == (404 if valid else 400) or (valid and status == 200)
    problem = image_problem(reference)
    assert (problem is None) is valid, problem
    if problem is not None:
        assert problem.startswith(f"{reference[:57]!r}"[:-1])
        assert "\n" not in problem
        assert len(problem) < 250
