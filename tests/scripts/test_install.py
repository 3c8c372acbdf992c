"""scripts/install.py: the README's install command.

Its pure parts (which uv wheel runs here, where `neo` goes) by table; the
command itself rehearsed in a fresh Debian container with nothing but
Debian's python3, as root and as a normal user, until a new shell runs
`neo --help` (tests/install_rehearsal.py).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import docker
import pytest
import yaml
from docker.errors import DockerException
from docker.models.containers import Container

from tests.install_rehearsal import (
    add_user,
    fresh_container,
    install_command,
    python_image,
    run_in,
)

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("neo_install", ROOT / "scripts" / "install.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install = _load()

# uv 0.13.9's files on PyPI, as its simple index lists them.
UV_FILES = [
    "uv-0.13.9-py3-none-linux_armv6l.whl",
    "uv-0.13.9-py3-none-macosx_10_12_x86_64.whl",
    "uv-0.13.9-py3-none-macosx_11_0_arm64.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_armv7l.manylinux2014_armv7l.musllinux_1_1_armv7l.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_armv7l.manylinux2014_armv7l.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_i686.manylinux2014_i686.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_s390x.manylinux2014_s390x.whl",
    "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "uv-0.13.9-py3-none-manylinux_2_28_aarch64.whl",
    "uv-0.13.9-py3-none-manylinux_2_31_riscv64.musllinux_1_1_riscv64.whl",
    "uv-0.13.9-py3-none-musllinux_1_1_i686.whl",
    "uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl",
    "uv-0.13.9-py3-none-win32.whl",
    "uv-0.13.9-py3-none-win_amd64.whl",
    "uv-0.13.9.tar.gz",
    # An older release's wheel is never taken for the pinned version.
    "uv-0.13.8-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
]
INDEX = [{"filename": name, "url": f"https://files.example/{name}"} for name in UV_FILES]


@pytest.mark.parametrize(
    ("system", "machine", "libc", "wheel"),
    [
        ("Linux", "x86_64", ("glibc", (2, 36)), "manylinux_2_17_x86_64.manylinux2014_x86_64"),
        ("Linux", "amd64", ("glibc", (2, 17)), "manylinux_2_17_x86_64.manylinux2014_x86_64"),
        ("Linux", "aarch64", ("glibc", (2, 39)), "manylinux_2_28_aarch64"),
        ("Linux", "aarch64", ("glibc", (2, 27)), "manylinux_2_17_aarch64"),
        ("Linux", "x86_64", ("musl", (1, 2)), "musllinux_1_1_x86_64"),
        ("Linux", "aarch64", ("musl", (1, 2)), "manylinux_2_17_aarch64"),
        ("Darwin", "arm64", None, "macosx_11_0_arm64"),
        ("Darwin", "x86_64", None, "macosx_10_12_x86_64"),
    ],
)
def test_the_uv_wheel_is_the_one_that_runs_here(
    system: str, machine: str, libc: Any, wheel: str
) -> None:
    chosen = install.pick_wheel(INDEX, "0.13.9", system, machine, libc)

    assert chosen["filename"].startswith(f"uv-0.13.9-py3-none-{wheel}")


@pytest.mark.parametrize(
    ("system", "machine", "libc"),
    [
        ("Linux", "x86_64", ("glibc", (2, 12))),
        ("Linux", "mips", ("glibc", (2, 36))),
        ("Windows", "AMD64", None),
        ("FreeBSD", "amd64", None),
    ],
)
def test_no_wheel_that_runs_here_is_one_line(system: str, machine: str, libc: Any) -> None:
    with pytest.raises(install.InstallError) as raised:
        install.pick_wheel(INDEX, "0.13.9", system, machine, libc)

    assert f"PyPI has no uv 0.13.9 for {system} {machine}" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_yanked_wheel_is_never_taken() -> None:
    index = [{**entry, "yanked": "x86_64" in entry["filename"]} for entry in INDEX]

    with pytest.raises(install.InstallError):
        install.pick_wheel(index, "0.13.9", "Linux", "x86_64", ("glibc", (2, 36)))


def test_root_links_where_every_shell_looks_and_a_user_where_uv_puts_tools() -> None:
    home = Path("/home/alice")

    assert install.default_bin_dir(0, {}, Path("/root")) == Path("/usr/local/bin")
    assert install.default_bin_dir(1000, {}, home) == home / ".local" / "bin"
    assert install.default_bin_dir(1000, {"XDG_BIN_HOME": "/opt/b"}, home) == Path("/opt/b")
    assert install.on_path(Path("/usr/local/bin"), "/usr/bin:/usr/local/bin/")
    assert not install.on_path(home / ".local/bin", "/usr/bin::/bin")


def test_the_uv_version_is_the_one_ci_and_the_images_use() -> None:
    dockerfile = re.search(r"ARG UV_VERSION=(\S+)", (ROOT / "Dockerfile").read_text())
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    setup_uv = [
        step["with"]["version"]
        for steps in (action["runs"]["steps"], ci["jobs"]["test"]["steps"])
        for step in steps
        if str(step.get("uses", "")).startswith("astral-sh/setup-uv")
    ]

    assert dockerfile
    assert dockerfile[1] == install.UV_VERSION
    assert setup_uv == [install.UV_VERSION, install.UV_VERSION]


def test_the_readme_installs_with_the_installer() -> None:
    assert install_command() == "python3 scripts/install.py\n"


# -- the install command, in a fresh Debian container ------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except DockerException as exc:
        pytest.fail(f"cannot reach the Docker engine ({exc}); run scripts/ensure-docker")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def debian(client: docker.DockerClient) -> str:
    """Debian with `apt-get install python3`: no pip, no venv module, no uv."""
    image, _ = python_image(client)
    return image


def _no_tools(container: Container) -> None:
    ran = run_in(
        container,
        "python3 -m pip --version; python3 -m venv /tmp/v; command -v uv curl; true",
    )
    assert "No module named pip" in ran.output, ran.output
    assert "ensurepip is not\navailable" in ran.output, ran.output
    assert "/uv" not in ran.output, ran.output
    assert "/curl" not in ran.output, ran.output


def test_the_install_command_as_root_gives_every_new_shell_neo(
    client: docker.DockerClient, debian: str
) -> None:
    with fresh_container(client, debian) as container:
        _no_tools(container)

        ran = run_in(container, f"cd /src && {install_command()}")

        assert ran.status == 0, ran.output[-4000:]
        login = run_in(container, "bash -lc 'command -v neo && neo --help'")
        plain = run_in(container, "env -i PATH=/usr/local/bin:/usr/bin:/bin sh -c 'neo --help'")
        again = run_in(container, f"cd /src && {install_command()}")
    assert login.status == 0, login.output
    assert login.output.startswith("/usr/local/bin/neo\nusage: neo"), login.output
    assert plain.status == 0, plain.output
    assert plain.output.startswith("usage: neo"), plain.output
    assert again.status == 0, again.output[-4000:]


def test_the_install_command_as_a_normal_user_gives_their_new_shells_neo(
    client: docker.DockerClient, debian: str
) -> None:
    with fresh_container(client, debian) as container:
        add_user(container, "alice")

        ran = run_in(container, f"cd ~/neo && {install_command()}", user="alice")

        assert ran.status == 0, ran.output[-4000:]
        # A new login shell (a terminal, ssh) reads ~/.profile ...
        login = run_in(container, "command -v neo && neo --help", user="alice")
        # ... an interactive one that is not a login shell reads ~/.bashrc.
        interactive = run_in(
            container,
            "env -i HOME=/home/alice PATH=/usr/bin:/bin bash -ic 'neo --help' 2>/dev/null",
            user="alice",
        )
        owners = run_in(container, "find /home/alice ! -user alice | head -5", user="alice")
    assert login.status == 0, login.output
    assert login.output.startswith("/home/alice/.local/bin/neo\nusage: neo"), login.output
    assert interactive.status == 0, interactive.output
    assert "usage: neo" in interactive.output, interactive.output
    assert owners.output == "", f"files in alice's home that are not hers: {owners.output}"
