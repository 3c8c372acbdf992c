"""A job's automatic setup end to end: a Python project whose dependency comes from the test's
own package index, through runner.job.run, the docker sandbox and its egress proxy.

The repository's files name the index (`--index-url` in requirements.txt); the
index serves tiny wheels built by the test on a Docker network of its own, and
the job's proxy reaches that network (NEO_EGRESS_NETWORK). Nothing reaches PyPI.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from runner.fork import Fork
from runner.job import JobSpec, run
from runner.sandbox.factory import EGRESS_NETWORKS_VARIABLE
from runner.sandbox.prepared import LABEL_REPOSITORY, prune
from runner.sandbox.preparing import orphaned
from runner.sandbox.requests import Bounds
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitServer,
    Reply,
    add_commit,
    make_pull_request,
    make_repo,
    text,
    tool_use,
)
from tests.package_index import Package, PackageIndex, package_index
from tests.runner.network.conftest import egress_image
from tests.runner.sandbox.conftest import SANDBOX_IMAGE, docker_client
from tests.runner.test_job import job_spec

__all__ = ["docker_client", "egress_image"]

TOKEN = "ghs_SetupJobTokenForTheTests000000000000ab"
CHECK = "python3 -c 'import calc_dep; print(calc_dep.VALUE)' && pytest -q -p no:cacheprovider"


@pytest.fixture(scope="module")
def index(docker_client: DockerClient, egress_image: str) -> Iterator[PackageIndex]:
    with package_index(docker_client, [Package("calc-dep", "1.0")], image=SANDBOX_IMAGE) as served:
        yield served


@pytest.fixture
def origin(tmp_path: Path, index: PackageIndex) -> Path:
    """A repository (its own name: its environments are its own) that declares its dependency."""
    repo = tmp_path / "served" / "octo" / f"calc-{secrets.token_hex(4)}.git"
    make_repo(repo, files=1)
    add_commit(
        repo,
        {
            "requirements.txt": f"--index-url {index.url}\ncalc-dep==1.0\n".encode(),
            "test_calc.py": b"import calc_dep\n\ndef test_value():\n    assert calc_dep.VALUE\n",
        },
        message="Declare the dependency",
    )
    return repo


@pytest.fixture
def server(tmp_path: Path, origin: Path) -> Iterator[FakeGitServer]:
    with FakeGitServer(tmp_path / "served", token=TOKEN) as fake:
        yield fake


@pytest.fixture
def spec_for(
    server: FakeGitServer,
    origin: Path,
    tmp_path: Path,
    index: PackageIndex,
    fake_anthropic: FakeAnthropicAPI,
    docker_client: DockerClient,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Any]:
    """A docker job on `origin`, its proxy on the index's network; its environments go after."""
    for name, value in fake_anthropic.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(EGRESS_NETWORKS_VARIABLE, index.network)
    url = server.url(f"octo/{origin.name}")

    def make(job_id: str, **changes: Any) -> JobSpec:
        values: dict[str, Any] = {
            "job_id": job_id,
            "repo_url": url,
            "token": TOKEN,
            "base_branch": "main",
            "work_branch": f"neo/{job_id}",
            "prompt": "Check that the tests pass.",
            "data_dir": tmp_path / "data",
            "model": "claude-test",
            "sandbox": "docker",
            "image": SANDBOX_IMAGE,
            "time_limit": 300.0,
            **changes,
        }
        return job_spec(**values)

    yield make
    prune(docker_client, Bounds(), everything=True, orphan=orphaned, repository=url)


def check_then_answer(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply([tool_use("t1", "bash", {"command": CHECK})], "tool_use"),
        Reply([text("The tests pass; nothing to change.")]),
    )


def tool_output(fake: FakeAnthropicAPI) -> str:
    content = fake.requests[1].body["messages"][-1]["content"][0]["content"]
    return "".join(part["text"] for part in content)


def environment_segment(fake: FakeAnthropicAPI) -> str:
    return str(fake.requests[0].body["system"][-1]["text"])


async def test_a_python_projects_dependency_is_installed_once_and_reused(
    spec_for: Any, fake_anthropic: FakeAnthropicAPI, index: PackageIndex
) -> None:
    check_then_answer(fake_anthropic)

    first = await run(spec_for("job-cold"))

    assert first.conclusion == "no_changes", first
    output = tool_output(fake_anthropic)
    assert "1.0" in output
    assert "1 passed" in output
    assert first.setup is not None
    assert [(s.command, s.ok) for s in first.setup.steps] == [
        ("uv pip install -r requirements.txt", True)
    ]
    assert first.setup.kept
    assert "- `uv pip install -r requirements.txt`: succeeded in" in environment_segment(
        fake_anthropic
    )
    downloaded = index.downloads("calc_dep")
    assert downloaded > 0

    fake_anthropic.requests.clear()
    check_then_answer(fake_anthropic)
    second = await run(spec_for("job-warm"))

    assert second.conclusion == "no_changes", second
    assert "1 passed" in tool_output(fake_anthropic)
    assert second.setup is not None
    assert second.setup.reused_from is not None
    assert "prepared by an earlier job" in environment_segment(fake_anthropic)
    # The index saw no download for the second job.
    assert index.downloads("calc_dep") == downloaded


async def test_a_failing_detected_command_is_reported_and_the_job_goes_on(
    spec_for: Any, fake_anthropic: FakeAnthropicAPI, origin: Path, index: PackageIndex
) -> None:
    add_commit(origin, {"requirements.txt": f"--index-url {index.url}\nno-such-dep\n".encode()})
    fake_anthropic.script(Reply([text("Could not install the dependency.")]))

    result = await run(spec_for("job-broken"))

    assert result.conclusion == "no_changes", result
    assert result.setup is not None
    (step,) = result.setup.steps
    assert not step.ok
    assert "no-such-dep" in step.tail
    assert not result.setup.kept
    segment = environment_segment(fake_anthropic)
    assert "- `uv pip install -r requirements.txt`: FAILED (exit code" in segment
    assert "Last lines of `uv pip install -r requirements.txt`:" in segment


async def test_a_forks_pull_request_job_keeps_nothing(
    spec_for: Any, fake_anthropic: FakeAnthropicAPI, docker_client: DockerClient, origin: Path
) -> None:
    # The fork's head: its setup runs the fork's code, for this job alone.
    make_pull_request(origin, 7, {"conftest.py": b"VALUE = 1\n"})
    fake_anthropic.script(Reply([text("Fine.")]))
    spec = spec_for("job-fork", work_branch="neo/pr-7", pull_request=7, fork=Fork())

    result = await run(spec)

    assert result.conclusion == "no_changes", result
    assert result.setup is not None
    assert [s.ok for s in result.setup.steps] == [True]
    assert not result.setup.kept
    # Neither an entry nor the job's own image is left.
    labelled = {"label": f"{LABEL_REPOSITORY}={spec.repo_url}"}
    assert docker_client.api.images(filters=labelled) == []
