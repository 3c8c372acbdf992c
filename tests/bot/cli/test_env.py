"""`neo env list` and `neo env prune` against the real engine, on environments of the test's own."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
from collections.abc import Iterator

import pytest
from docker import DockerClient
from docker.errors import ImageNotFound

from bot.cli.main import main
from runner.sandbox.owners import LABEL_OWNER, LABEL_PROCESS, owner_labels, process_identity
from runner.sandbox.prepared import JobImage, commit_environment, list_entries
from runner.sandbox.setup_plan import SetupOutcome, StepOutcome
from tests.runner.sandbox.conftest import SANDBOX_IMAGE, docker_client

__all__ = ["docker_client"]

SETUP = SetupOutcome("auto", (StepOutcome("uv pip install -r requirements.txt", "python", 2.0, 0),))


def dead_runner() -> JobImage:
    """The key of a private image whose runner has exited: its pid and its
    process identity, as a runner labels one (its pid may be a new
    process's by the time of the prune: the suite starts thousands)."""
    probe = subprocess.Popen(["sleep", "300"])
    process = process_identity(probe.pid)
    probe.kill()
    probe.wait()
    return JobImage("job-test", f"{socket.gethostname()}:{probe.pid}", process)


@pytest.fixture
def repository(docker_client: DockerClient) -> Iterator[str]:
    """A clone URL of the test's own; its environments are removed after it."""
    name = f"http://git.test/octo/env-{secrets.token_hex(4)}.git"
    yield name
    for entry in list_entries(docker_client):
        if entry.repository == name:
            with contextlib.suppress(ImageNotFound):
                docker_client.images.remove(entry.image_id, force=True)


def make_entry(client: DockerClient, repository: str, *, key: str | JobImage | None) -> str:
    """An environment as setup leaves one: a stopped container of the sandbox image, committed."""
    container = client.api.create_container(
        SANDBOX_IMAGE, command=["true"], labels={"neo.test": "1"}
    )
    try:
        return commit_environment(
            client,
            container["Id"],
            key=key if key is not None else JobImage("job-test", f"{socket.gethostname()}:1"),
            repository=repository,
            base_image=str(client.images.get(SANDBOX_IMAGE).id),
            setup=SETUP,
        )
    finally:
        client.api.remove_container(container["Id"], force=True)


def listed(capsys: pytest.CaptureFixture[str], repository: str) -> list[dict[str, object]]:
    assert main(["env", "list", "--format", "json"]) == 0
    return [e for e in json.loads(capsys.readouterr().out) if e["repository"] == repository]


def test_list_shows_each_environment_with_its_setup(
    docker_client: DockerClient, repository: str, capsys: pytest.CaptureFixture[str]
) -> None:
    image = make_entry(docker_client, repository, key=secrets.token_hex(32))

    (entry,) = listed(capsys, repository)

    assert entry["image"] == image
    assert entry["setup"] == ["uv pip install -r requirements.txt"]
    assert entry["job"] is None
    assert main(["env", "list"]) == 0
    assert "octo/env-" in capsys.readouterr().out


def test_prune_keeps_the_bound_the_most_recently_used_first_and_all_removes_every_one(
    docker_client: DockerClient,
    repository: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    older = make_entry(docker_client, repository, key=secrets.token_hex(32))
    newer = make_entry(docker_client, repository, key=secrets.token_hex(32))
    short = repository.removeprefix("http://git.test/").removesuffix(".git")
    monkeypatch.setenv("NEO_PREPARED_MAX_COUNT", "1")

    assert main(["env", "prune", "--repository", short]) == 0
    out = capsys.readouterr().out
    assert [e["image"] for e in listed(capsys, repository)] == [newer]
    assert out.startswith("removed neo-env:")
    assert out.endswith("1 removed, 0 B freed\n")
    del older

    assert main(["env", "prune", "--all", "--repository", repository]) == 0
    assert "1 removed" in capsys.readouterr().out
    assert listed(capsys, repository) == []


def test_prune_removes_a_job_image_whose_runner_is_gone_and_keeps_a_live_ones(
    docker_client: DockerClient, repository: str, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = make_entry(docker_client, repository, key=dead_runner())
    mine = owner_labels()
    live = make_entry(
        docker_client,
        repository,
        key=JobImage("job-test", mine[LABEL_OWNER], mine.get(LABEL_PROCESS)),
    )

    assert main(["env", "prune", "--repository", repository]) == 0
    assert capsys.readouterr().out.endswith("1 removed, 0 B freed\n")

    assert [e["image"] for e in listed(capsys, repository)] == [live]
    del gone


def test_a_bad_bound_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEO_PREPARED_MAX_COUNT", "-1")

    assert main(["env", "prune"]) == 2
    assert capsys.readouterr().err == (
        "neo: error: NEO_PREPARED_MAX_COUNT: Input should be greater than or equal to 0\n"
    )


def test_an_unknown_repository_removes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "prune", "--all", "--repository", "nobody/nothing"]) == 0
    assert capsys.readouterr().out == "no prepared environment of nobody/nothing\n"
