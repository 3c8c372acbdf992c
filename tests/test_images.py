"""The sandbox image that scripts/build-images makes, checked on a real engine.

These tests never skip: scripts/test starts the engine and builds the image
first, so a failure here means the setup is broken, not that it is absent.
"""

import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import DockerException, ImageNotFound
from docker.models.images import Image

REPO = Path(__file__).resolve().parents[1]
IMAGE = "neo-sandbox:local"
RUN_TIMEOUT = 60


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=RUN_TIMEOUT)
        client.ping()
    except DockerException as exc:
        pytest.fail(f"cannot reach the Docker engine ({exc}); run scripts/ensure-docker")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def image(client: docker.DockerClient) -> Image:
    try:
        return client.images.get(IMAGE)
    except ImageNotFound:
        pytest.fail(f"image {IMAGE} is missing; run scripts/build-images")


def run(client: docker.DockerClient, argv: Sequence[str], **options: Any) -> tuple[int, str]:
    """Run `argv` in a fresh, networkless sandbox container; exit status and output."""
    container = client.containers.run(
        IMAGE, list(argv), detach=True, network_mode="none", **options
    )
    try:
        status = container.wait(timeout=RUN_TIMEOUT)
        output = container.logs(stdout=True, stderr=True).decode()
    finally:
        container.remove(force=True)
    return int(status["StatusCode"]), output


def test_image_is_configured_for_an_unprivileged_user(image: Image) -> None:
    config = image.attrs["Config"]
    assert config["User"] == "neo"
    assert config["WorkingDir"] == "/workspace"
    assert "LANG=C.UTF-8" in config["Env"]
    assert "HOME=/home/neo" in config["Env"]
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"]
    assert re.fullmatch(r"[0-9a-f]{64}", config["Labels"]["neo.dockerfile-sha"])


# Each tool and what its --version says.
TOOLS = {
    "bash": "GNU bash",
    "git": "git version",
    "rg": "ripgrep",
    "python3": "Python 3.",
    "cc": "Free Software Foundation",
    "make": "GNU Make",
    "tini": "tini version",
    "patch": "GNU patch",
    "diff": "diffutils",
    "gawk": "GNU Awk",
    "ps": "procps",
    "curl": "curl",
    # The toolchains automatic setup calls (runner/sandbox/setup_detect.py): a
    # detected command whose program is missing would fail every job of its
    # ecosystem.
    "uv": "uv 0.",
    "node": "v18.",
    "go": "go version go1.23",
    "cargo": "cargo 1.",
    "rustc": "rustc 1.",
    "ruby": "ruby 3.",
    "bundle": "Bundler version",
}
# Tools whose start alone takes seconds (Python's and Node's package
# managers): present and executable, their interpreter too.
LAUNCHERS = ("poetry", "pipenv", "npm", "pnpm", "yarn", "/opt/neo-env/venv/bin/pytest")
_RUNNABLE = r"""
runnable() {
    local path interpreter
    path=$(command -v "$1") && path=$(readlink -f "$path") && [[ -x $path ]] || return 1
    read -r interpreter _ < "$path"
    [[ $interpreter == '#!'* ]] || return 0
    interpreter=${interpreter#'#!'}
    [[ $interpreter == */env ]] && { read -r _ interpreter < "$path"; command -v "$interpreter"; }
    [[ -x $(readlink -f "$(command -v "$interpreter")") ]]
}
"""


def test_every_tool_and_toolchain_is_installed(client: docker.DockerClient) -> None:
    # One container for all: each tool's answer follows a line naming it.
    script = _RUNNABLE + "".join(
        [
            f"echo '@@ {tool}'; {'go version' if tool == 'go' else f'{tool} --version'} 2>&1"
            ' || echo "exit $?"; '
            for tool in TOOLS
        ]
        + [f"echo '@@ {tool}'; runnable {tool} && echo runnable; " for tool in LAUNCHERS]
    )
    status, output = run(client, ["bash", "-c", script])

    assert status == 0, output
    answers = dict(part.split("\n", 1) for part in output.split("@@ ")[1:] if "\n" in part)
    expected = {**TOOLS, **dict.fromkeys(LAUNCHERS, "runnable")}
    wrong = {
        tool: answers.get(tool, "").strip()[:200]
        for tool, words in expected.items()
        if words not in answers.get(tool, "") or "exit " in answers.get(tool, "")
    }
    assert wrong == {}


def test_c_toolchain_and_python_venv_work(client: docker.DockerClient) -> None:
    script = (
        "cd /tmp"
        " && printf 'int main(void){return 42;}\\n' > t.c && cc t.c -o t"
        ' && { ./t; echo "exit=$?"; }'
        " && python3 -m venv v && v/bin/python -c 'import sys; print(sys.prefix)'"
    )
    status, output = run(client, ["bash", "-c", script], tmpfs={"/tmp": "exec"})
    assert status == 0, output
    assert "exit=42" in output
    assert "/tmp/v" in output


def test_runs_as_neo_with_uid_1000(client: docker.DockerClient) -> None:
    status, output = run(client, ["sh", "-c", "id -u; id -g; id -un; echo $HOME"])
    assert status == 0, output
    assert output.split() == ["1000", "1000", "neo", "/home/neo"]


def test_workspace_is_owned_by_neo(client: docker.DockerClient) -> None:
    status, output = run(client, ["stat", "-c", "%U:%G %u:%g", "/workspace"])
    assert status == 0, output
    assert output.strip() == "neo:neo 1000:1000"


def test_runs_with_a_read_only_root_and_a_tmpfs(client: docker.DockerClient) -> None:
    script = "echo ok > /tmp/probe && cat /tmp/probe && ! touch /home/neo/probe 2>/dev/null"
    status, output = run(client, ["bash", "-c", script], read_only=True, tmpfs={"/tmp": ""})
    assert status == 0, output
    assert output.strip() == "ok"


def test_utf8_locale_is_available(client: docker.DockerClient) -> None:
    status, output = run(
        client, ["python3", "-c", "import sys; print(sys.getfilesystemencoding())"]
    )
    assert status == 0, output
    assert output.strip() == "utf-8"


def test_dockerfile_takes_its_base_image_as_a_build_argument() -> None:
    """Every stage starts from BASE_IMAGE or from a stage before it.

    A machine without a registry builds from a Debian base it bootstrapped
    (scripts/build-images), so no stage may name an image of its own; the
    targets build-images builds all lead back to the argument.
    """
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text().splitlines()]
    arg = lines.index("ARG BASE_IMAGE=debian:bookworm-slim")
    # An ARG is only visible to FROM when it comes before every stage.
    assert not any(line.startswith("FROM ") for line in lines[:arg])
    parents: dict[str, str] = {}
    for line in lines:
        if line.startswith("FROM "):
            found = re.fullmatch(r"FROM (\S+) AS (\S+)", line)
            assert found, f"a stage without a name, or with options: {line!r}"
            parent, stage = found.groups()
            assert parent == "${BASE_IMAGE}" or parent in parents, line
            parents[stage] = parent
    for target in ("sandbox", "egress", "service"):
        stage = target
        while stage in parents:
            stage = parents[stage]
        assert stage == "${BASE_IMAGE}", target


def test_second_build_reuses_the_image(image: Image) -> None:
    # Dot-names aside (caches the test run itself may create meanwhile).
    before = sorted(path.name for path in REPO.iterdir() if not path.name.startswith("."))
    result = subprocess.run(
        [str(REPO / "scripts" / "build-images")],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"{IMAGE} reused" in result.stdout
    # The service image may rebuild when Neo's source changed meanwhile; this one must not.
    assert f"{IMAGE} built" not in result.stdout
    # The build contexts (the host's authorities among them) are made elsewhere.
    after = sorted(path.name for path in REPO.iterdir() if not path.name.startswith("."))
    assert after == before
