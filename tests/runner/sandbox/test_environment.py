"""The environment a docker sandbox's commands see: Neo's variables over the image's, one PATH."""

from __future__ import annotations

from runner.sandbox.base import COMMAND_ENV
from runner.sandbox.environment import DEFAULT_PATH, VENV, container_environment, image_variables


def test_an_image_without_variables_gets_neos_and_the_environments_path() -> None:
    env = container_environment({})
    assert env["PATH"].split(":") == [
        f"{VENV}/bin",
        "/opt/neo-env/npm/bin",
        "/node_modules/.bin",
        "/opt/neo-env/go/bin",
        "/opt/neo-env/cargo/bin",
        "/opt/neo-env/gems/bin",
        *DEFAULT_PATH.split(":"),
    ]
    assert env["VIRTUAL_ENV"] == VENV
    assert env["HOME"] == "/home/neo"
    assert env.items() >= COMMAND_ENV.items()


def test_a_custom_images_path_comes_after_the_virtual_environment_its_variables_stay() -> None:
    image = image_variables(
        [
            "PATH=/opt/java/bin:/usr/local/bin:/usr/bin:/bin",
            "JAVA_HOME=/opt/java",
            "HOME=/root",
            "broken",
            "=x",
            "EMPTY=",
        ]
    )
    env = container_environment(image)
    path = env["PATH"].split(":")
    assert path[:4] == [f"{VENV}/bin", "/opt/java/bin", "/usr/local/bin", "/usr/bin"]
    assert path.index("/bin") < path.index("/opt/neo-env/npm/bin") < path.index("/usr/sbin")
    assert len(path) == len(set(path))
    assert env["JAVA_HOME"] == "/opt/java"
    assert env["EMPTY"] == ""
    # Neo's own win where they collide.
    assert env["HOME"] == "/home/neo"
    assert "broken" not in env
    assert "" not in env


def test_a_prepared_images_own_path_composes_to_itself() -> None:
    once = container_environment(image_variables(["PATH=/opt/custom/bin:/usr/bin"]))
    twice = container_environment(once)
    assert twice == once


def test_extra_variables_win() -> None:
    env = container_environment(
        {"HTTPS_PROXY": "http://stale:1"}, {"HTTPS_PROXY": "http://proxy:3128"}
    )
    assert env["HTTPS_PROXY"] == "http://proxy:3128"
