"""Setup and prepared environments against the real engine, a package index of the test's own.

The index serves tiny wheels built by the test, on a Docker network of its
own; setup reaches it there, and nothing reaches PyPI.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import docker
import pytest
from docker import DockerClient

from runner.network import OFF, EgressReport, Plan, plan, policy_of
from runner.sandbox.base import Sandbox
from runner.sandbox.docker import LABEL_JOB
from runner.sandbox.factory import EGRESS_NETWORKS_VARIABLE, SandboxChoice, open_environment
from runner.sandbox.prepared import (
    LABEL_REPOSITORY,
    environment_key,
    find_entry,
    list_entries,
    prune,
)
from runner.sandbox.preparing import orphaned
from runner.sandbox.requests import Bounds, EnvironmentRequest, Opened
from runner.sandbox.setup_detect import plan_setup
from runner.sandbox.setup_files import read_setup_files
from runner.sandbox.setup_run import SetupFailed
from tests.package_index import Package, PackageIndex, package_index
from tests.runner.network.conftest import address_on, egress_image
from tests.runner.sandbox.conftest import SANDBOX_IMAGE

__all__ = ["egress_image"]

PACKAGES = [
    Package("calc-dep", "1.0"),
    Package("calc-dep", "2.0"),
    Package("calc-extra", "1.0", requires=("calc-dep",)),
]


@pytest.fixture(scope="module")
def index(docker_client: DockerClient, egress_image: str) -> Iterator[PackageIndex]:
    with package_index(docker_client, PACKAGES, image=SANDBOX_IMAGE) as served:
        yield served


@pytest.fixture(autouse=True)
def egress_network(index: PackageIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs' egress proxies reach the outside through the index's network."""
    monkeypatch.setenv(EGRESS_NETWORKS_VARIABLE, index.network)


@pytest.fixture
def repository() -> Iterator[str]:
    """A repository name of this test's own; its environments are removed after it."""
    name = f"test/prepared-{secrets.token_hex(4)}"
    yield name
    client = _client()
    for entry in list_entries(client):
        if entry.repository == name:
            client.api.remove_image(entry.image_id, force=True)


def _client() -> DockerClient:
    return docker.from_env()


def project(tmp_path: Path, index: PackageIndex, *requirements: str, name: str = "tree") -> Path:
    tree = tmp_path / name
    tree.mkdir()
    lines = [f"--index-url {index.url}", *requirements]
    (tree / "requirements.txt").write_text("\n".join(lines) + "\n")
    (tree / "test_calc.py").write_text(
        "import calc_dep\n\ndef test_it():\n    assert calc_dep.VALUE\n"
    )
    return tree


def request_for(
    tree: Path,
    index: PackageIndex,
    repository: str | None,
    *,
    setup: list[str] | None = None,
    share: bool = True,
) -> EnvironmentRequest:
    """The request a job makes: `setup` as .github/neo.yml has it (None: detect)."""
    files = read_setup_files(tree, setup or ())
    return EnvironmentRequest(plan_setup(setup, files), files, repository=repository, share=share)


# A repository that sets no `network` and detects nothing: setup may reach
# any public host (the index), the agent nothing.
NETWORK = plan(policy_of([]), None)


@contextlib.asynccontextmanager
async def job(
    tree: Path,
    request: EnvironmentRequest,
    *,
    job_id: str,
    image: str = SANDBOX_IMAGE,
    report: EgressReport | None = None,
    network: Plan = NETWORK,
) -> AsyncIterator[Opened]:
    """A job's sandbox as the runner opens it, its egress proxy on the index's network."""
    async with open_environment(
        SandboxChoice("docker", image),
        tree,
        job_id=job_id,
        environment=request,
        network=network,
        report=report,
    ) as opened:
        yield opened


async def sh(box: Sandbox, command: str) -> str:
    done = await box.run(["bash", "-c", command], timeout=120)
    return done.output.decode().strip()


def env_images(client: DockerClient, repository: str) -> list[str]:
    found = client.api.images(filters={"label": f"{LABEL_REPOSITORY}={repository}"})
    return [image["Id"] for image in found]


async def test_detected_setup_installs_outside_the_tree_is_reused_and_redone_for_a_new_lockfile(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tree = project(tmp_path, index, "calc-dep==1.0")
    before = index.downloads("calc_dep")

    async with job(tree, request_for(tree, index, repository), job_id="test-cold") as opened:
        imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")
        tests = await sh(opened.box, "pytest -q -p no:cacheprovider test_calc.py | tail -1")
        shown = await sh(opened.box, "pip show calc-dep | sed -n 1,2p")
        listed = await sh(opened.box, "ls -A")
    cold = opened.setup

    assert imported == "1.0"
    assert "1 passed" in tests
    assert shown == "Name: calc-dep\nVersion: 1.0"
    # Nothing setup installed is in the tree, so nothing of it can reach a commit.
    assert listed == "requirements.txt\ntest_calc.py"
    assert cold.mode == "auto"
    assert [(step.command, step.ok) for step in cold.steps] == [
        ("uv pip install -r requirements.txt", True)
    ]
    assert cold.reused_from is None
    assert cold.kept
    downloaded = index.downloads("calc_dep")
    assert downloaded > before

    async with job(tree, request_for(tree, index, repository), job_id="test-warm") as opened:
        imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")
    warm = opened.setup

    assert imported == "1.0"
    # The second job started from the kept environment: setup did not run
    # again, and the index saw no download for it.
    assert index.downloads("calc_dep") == downloaded
    assert warm.reused_from is not None
    assert [step.command for step in warm.steps] == ["uv pip install -r requirements.txt"]
    assert len(env_images(docker_client, repository)) == 1

    # A changed lockfile is a new key: setup runs again, and both are kept.
    (tree / "requirements.txt").write_text(f"--index-url {index.url}\ncalc-dep==2.0\n")
    async with job(tree, request_for(tree, index, repository), job_id="test-v2") as opened:
        imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")

    assert imported == "2.0"
    assert opened.setup.reused_from is None
    assert len(env_images(docker_client, repository)) == 2


async def test_a_failing_detected_command_is_reported_and_the_job_goes_on(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tree = project(tmp_path, index, "calc-missing==9")
    (tree / "package-lock.json").write_text("{}")  # npm ci fails: no package.json

    async with job(tree, request_for(tree, index, repository), job_id="test-fails") as opened:
        alive = await sh(opened.box, "echo alive")
    outcome = opened.setup

    assert alive == "alive"
    assert [step.ok for step in outcome.steps] == [False, False]
    python, node = outcome.steps
    assert python.exit_code != 0
    assert "calc-missing" in python.tail
    assert node.command == "npm ci"
    assert node.tail
    assert len(python.tail.splitlines()) <= 20
    # A failed setup is never kept: the next job tries again.
    assert not outcome.kept
    assert env_images(docker_client, repository) == []


async def test_a_failing_repository_command_fails_and_leaves_nothing(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    name = f"test-explicit-{secrets.token_hex(3)}"

    with pytest.raises(SetupFailed) as raised:
        async with job(
            tmp_path,
            request_for(tmp_path, index, repository, setup=["true", "echo broken; exit 4"]),
            job_id=name,
        ):
            pytest.fail("the sandbox started")

    assert str(raised.value) == "setup command 2 of 2 failed (exit code 4): echo broken; exit 4"
    assert raised.value.result.output == b"broken\n"
    # What ran up to it, and its last lines, for the report.
    outcome = raised.value.outcome
    assert outcome is not None
    assert [(step.command, step.ok) for step in outcome.steps] == [
        ("true", True),
        ("echo broken; exit 4", False),
    ]
    assert (outcome.steps[1].exit_code, outcome.steps[1].tail) == (4, "broken")
    for each in (name, f"{name}-setup"):
        assert (
            docker_client.api.containers(all=True, filters={"label": f"{LABEL_JOB}={each}"}) == []
        )
    assert env_images(docker_client, repository) == []


async def test_every_process_setup_started_is_ended_before_the_agent_starts(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    marker = secrets.token_hex(4)
    setup = [
        f"setsid sleep 1{marker[:3]} >/dev/null 2>&1 < /dev/null &",
        f"nohup bash -c 'exec -a left-{marker} sleep 1000' >/dev/null 2>&1 &",
    ]
    async with job(
        tmp_path, request_for(tmp_path, index, repository, setup=setup), job_id="test-leftovers"
    ) as opened:
        processes = await sh(opened.box, "ps -eo args")

    assert [step.ok for step in opened.setup.steps] == [True, True]
    assert marker not in processes
    assert f"sleep 1{marker[:3]}" not in processes


async def test_a_fork_pull_request_writes_no_environment_but_may_reuse_one(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tree = project(tmp_path, index, "calc-dep==1.0")
    async with job(
        tree, request_for(tree, index, repository, share=False), job_id="test-fork"
    ) as opened:
        imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")
        during = env_images(docker_client, repository)

    assert imported == "1.0"
    assert not opened.setup.kept
    # The job's own image, labelled as its and no entry: gone with the job.
    assert len(during) == 1
    assert find_entry(docker_client, _key(tree, index, repository, docker_client), Bounds()) is None
    # This repository's: other tests and other jobs on the shared engine make their own.
    assert env_images(docker_client, repository) == []

    # One a trusted job kept is started from.
    async with job(tree, request_for(tree, index, repository), job_id="test-trusted"):
        pass
    async with job(
        tree, request_for(tree, index, repository, share=False), job_id="test-fork-again"
    ) as opened:
        pass
    assert opened.setup.reused_from is not None


def _key(tree: Path, index: PackageIndex, repository: str, client: DockerClient) -> str:
    request = request_for(tree, index, repository)
    base = client.images.get(SANDBOX_IMAGE).id
    return environment_key(
        repository=repository, plan=request.plan, files=request.files, base_image=str(base)
    )


async def test_entries_expire_unused_and_are_bounded_in_number(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    trees = [project(tmp_path, index, f"calc-dep=={v}", name=f"t{v}") for v in ("1.0", "2.0")]
    for number, tree in enumerate(trees):
        async with job(tree, request_for(tree, index, repository), job_id=f"test-bound-{number}"):
            pass
    assert len(env_images(docker_client, repository)) == 2

    # The least recently used goes first once one entry only may be kept
    # (of this repository: the engine's other entries are not this test's to remove).
    mine = [e for e in list_entries(docker_client) if e.repository == repository]
    oldest = min(mine, key=lambda entry: entry.last_used)
    later = time.time() + 1
    removed = prune(
        docker_client, Bounds(max_entries=1), orphan=orphaned, repository=repository, now=later
    )
    assert [entry.image_id for entry in removed] == [oldest.image_id]

    # Unused past its time: removed by a prune, and never started from.
    key = _key(trees[1], index, repository, docker_client)
    assert find_entry(docker_client, key, Bounds(max_age=3600), now=time.time() + 7200) is None
    assert env_images(docker_client, repository) == []


async def test_a_custom_image_keeps_its_path_and_variables(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex
) -> None:
    tag = f"neo-test-custom-env:{secrets.token_hex(4)}"
    dockerfile = (
        f"FROM {SANDBOX_IMAGE}\n"
        "USER root\n"
        "RUN install -d /opt/custom/bin && printf '#!/bin/sh\\necho custom tool\\n'"
        " > /opt/custom/bin/custom-tool && chmod +x /opt/custom/bin/custom-tool\n"
        "ENV PATH=/opt/custom/bin:$PATH FOO=bar HOME=/root TERM=xterm\n"
        "USER neo\n"
    )
    built = subprocess.run(
        ["docker", "build", "--quiet", "--label", "neo.test=1", "--tag", tag, "-"],
        input=dockerfile,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    try:
        request = request_for(tmp_path, index, None, setup=[])
        async with job(tmp_path, request, job_id="test-custom", image=tag) as opened:
            path = await sh(opened.box, "echo $PATH")
            found = await sh(opened.box, "custom-tool; echo $FOO $HOME $TERM")
    finally:
        docker_client.images.remove(tag, force=True)

    directories = path.split(":")
    assert directories.index("/opt/custom/bin") < directories.index("/usr/bin")
    assert found == "custom tool\nbar /home/neo dumb"


async def test_setup_in_an_image_without_the_environment_makes_it(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tag = f"neo-test-bare:{secrets.token_hex(4)}"
    dockerfile = (
        f"FROM {SANDBOX_IMAGE}\nUSER root\nRUN rm -rf /opt/neo-env /node_modules\nUSER neo\n"
    )
    built = subprocess.run(
        ["docker", "build", "--quiet", "--label", "neo.test=1", "--tag", tag, "-"],
        input=dockerfile,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    tree = project(tmp_path, index, "calc-dep==2.0")
    try:
        async with job(
            tree, request_for(tree, index, repository), job_id="test-bare", image=tag
        ) as opened:
            imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")
            link = await sh(opened.box, "readlink /node_modules")
    finally:
        for image in env_images(docker_client, repository):
            docker_client.images.remove(image, force=True)
        docker_client.images.remove(tag, force=True)

    assert [step.ok for step in opened.setup.steps] == [True]
    assert imported == "2.0"
    assert link == "/opt/neo-env/node_modules"


async def test_node_modules_leave_the_tree_and_still_resolve(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tree = tmp_path / "tree"
    (tree / "vendor" / "left-pad").mkdir(parents=True)
    (tree / "vendor" / "left-pad" / "package.json").write_text(
        '{"name": "left-pad", "version": "1.0.0", "main": "index.js"}'
    )
    (tree / "vendor" / "left-pad" / "index.js").write_text("module.exports = () => 'padded';\n")
    (tree / "package.json").write_text(
        '{"name": "app", "version": "1.0.0", "dependencies": {"left-pad": "file:vendor/left-pad"}}'
    )
    (tree / "src").mkdir()
    (tree / "src" / "use.mjs").write_text("import pad from 'left-pad';\nconsole.log(pad());\n")
    # As npm 9 writes it for a dependency on a directory of the tree (a link).
    lock = {
        "name": "app",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {
                "name": "app",
                "version": "1.0.0",
                "dependencies": {"left-pad": "file:vendor/left-pad"},
            },
            "node_modules/left-pad": {"resolved": "vendor/left-pad", "link": True},
            "vendor/left-pad": {"version": "1.0.0"},
        },
    }
    (tree / "package-lock.json").write_text(json.dumps(lock))

    async with job(tree, request_for(tree, index, repository), job_id="test-node") as opened:
        listed = await sh(opened.box, "ls -A")
        required = await sh(opened.box, "cd src && node -e \"console.log(require('left-pad')())\"")
        imported = await sh(opened.box, "node src/use.mjs")

    assert [(step.command, step.ok) for step in opened.setup.steps] == [("npm ci", True)]
    assert "node_modules" not in listed.split()
    assert required == "padded"
    assert imported == "padded"


async def test_setup_commands_write_no_bytecode_into_the_tree(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex
) -> None:
    (tmp_path / "calc.py").write_text("ADD = 1\n")
    request = request_for(tmp_path, index, None, setup=["python3 -c 'import calc'"])

    async with job(tmp_path, request, job_id="test-bytecode") as opened:
        listed = await sh(opened.box, "ls -A")

    assert listed == "calc.py"


async def test_setup_reaches_the_index_and_the_agent_is_refused_it(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex
) -> None:
    reach = (
        f"python3 -c \"import urllib.request; urllib.request.urlopen('{index.url}', timeout=5)\""
    )
    # The index's own address, which only the proxy may reach: setup runs the
    # repository's code, and it has no other way out than the agent has.
    address = address_on(docker_client, index.container, index.network)
    port = urlsplit(index.url).port or 80
    direct = f"python3 -c \"import socket; socket.create_connection(('{address}', {port}), 5)\""
    setup = [
        f"{reach} && touch reached",
        "ls /sys/class/net > setup-interfaces",
        f"{direct} 2> direct-refused || true",
    ]
    request = request_for(tmp_path, index, None, setup=setup)
    report = EgressReport()

    async with job(tmp_path, request, job_id="test-setup-network", report=report) as opened:
        after = await opened.box.run(["bash", "-c", reach], timeout=60)
        interfaces = await sh(opened.box, "ls /sys/class/net")

    assert (tmp_path / "reached").exists()
    assert (tmp_path / "setup-interfaces").read_text() == "lo\n"
    assert "Network is unreachable" in (tmp_path / "direct-refused").read_text()
    assert after.exit_code != 0
    assert interfaces == "lo"
    # The agent's request, not setup's, is the one reported, with its command.
    assert [(b.host, b.phase, b.command) for b in report.blocked] == [
        (index.container, "agent", reach)
    ]


async def test_the_proxys_variables_stay_out_of_a_prepared_environment(
    docker_client: DockerClient, tmp_path: Path, index: PackageIndex, repository: str
) -> None:
    tree = project(tmp_path, index, "calc-dep==1.0")
    async with job(tree, request_for(tree, index, repository), job_id="test-proxied") as opened:
        proxied = await sh(opened.box, "env")
    (image,) = env_images(docker_client, repository)
    kept = docker_client.images.get(image).attrs["Config"]["Env"]

    async with job(
        tree, request_for(tree, index, repository), job_id="test-off", network=plan(OFF, None)
    ) as opened:
        offline = await sh(opened.box, "env")
        imported = await sh(opened.box, "python3 -c 'import calc_dep; print(calc_dep.VALUE)'")

    assert "HTTPS_PROXY=http://127.0.0.1:3128" in proxied.splitlines()
    assert not [entry for entry in kept if "PROXY" in entry.upper()]
    # A job without a network reuses it, and nothing in it leads to a proxy.
    assert opened.setup.reused_from is not None
    assert imported == "1.0"
    assert "PROXY" not in offline.upper()
