"""The README's install command, rehearsed in a fresh Debian container.

Shared by tests/scripts/test_install.py (it works) and bench/install.py (how
long it takes). The container starts from the Debian base scripts/build-images
used (`neo.base-image` on the sandbox image: debian:bookworm-slim, or the one
it bootstrapped from Debian's packages) with nothing but `python3` added from
Debian's packages. The clone is this working tree's files (tracked and new,
never ignored ones such as .venv), copied in.

This machine reaches PyPI through a proxy that intercepts TLS, which the
host trusts: the container gets the host's certificate authorities as
SSL_CERT_FILE, as docs/install.md tells users behind such a proxy to do.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import subprocess
import tarfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import ImageNotFound
from docker.models.containers import Container

ROOT = Path(__file__).resolve().parent.parent
SANDBOX_IMAGE = "neo-sandbox:local"
# Debian's python3, on the base: built once per base image, then reused.
PYTHON_IMAGE = "neo-install-rehearsal:python3"
LABEL = "neo.test"
LABEL_VALUE = "install-rehearsal"
CA_IN_CONTAINER = "/etc/neo-host-ca.crt"
APT_TIMEOUT = 900


@dataclass(frozen=True, slots=True)
class Ran:
    status: int
    output: str
    seconds: float


def install_command() -> str:
    """The README's first `sh` block: the install command, as a user copies it."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    assert found, "the README has no sh block"
    return found[1]


def base_image(client: docker.DockerClient) -> str:
    """The Debian image the sandbox image was built on."""
    try:
        labels = client.images.get(SANDBOX_IMAGE).labels or {}
    except ImageNotFound:
        raise AssertionError(f"{SANDBOX_IMAGE} is missing: run scripts/build-images") from None
    base = labels.get("neo.base-image")
    assert isinstance(base, str), f"{SANDBOX_IMAGE} has no neo.base-image label"
    return base


def python_image(client: docker.DockerClient) -> tuple[str, float]:
    """Debian plus `apt-get install python3`, and the seconds that took (0 if reused)."""
    base_id = str(client.images.get(base_image(client)).id)
    try:
        made = client.images.get(PYTHON_IMAGE)
        if (made.labels or {}).get("neo.base-id") == base_id:
            return PYTHON_IMAGE, 0.0
    except ImageNotFound:
        pass
    container = client.containers.run(
        base_id, ["sleep", "infinity"], detach=True, labels={LABEL: LABEL_VALUE}
    )
    try:
        ran = run_in(
            container,
            "apt-get update -qq && apt-get install -y -qq python3 >/dev/null",
            env={"DEBIAN_FRONTEND": "noninteractive"},
            timeout=APT_TIMEOUT,
        )
        assert ran.status == 0, f"apt-get install python3 failed:\n{ran.output[-3000:]}"
        container.commit(
            PYTHON_IMAGE.split(":")[0],
            PYTHON_IMAGE.split(":")[1],
            conf={"Labels": {LABEL: LABEL_VALUE, "neo.base-id": base_id}, "Cmd": ["bash"]},
        )
    finally:
        container.remove(force=True, v=True)
    return PYTHON_IMAGE, ran.seconds


def clone_archive() -> bytes:
    """This tree's files as a tar for /src: what `git clone` would give, plus new files."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in sorted(set(listed.decode().split("\0")) - {""}):
            path = ROOT / name
            if path.exists() or path.is_symlink():
                archive.add(path, arcname=f"src/{name}", recursive=False)
    return buffer.getvalue()


def host_ca_bundle() -> Path:
    return Path(os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")


@contextmanager
def fresh_container(client: docker.DockerClient, image: str) -> Iterator[Container]:
    """A container of `image` on the default bridge with the clone at /src."""
    volumes = {}
    environment = {}
    ca = host_ca_bundle()
    if ca.is_file():
        volumes[str(ca.resolve())] = {"bind": CA_IN_CONTAINER, "mode": "ro"}
        environment["SSL_CERT_FILE"] = CA_IN_CONTAINER
    container = client.containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        name=f"neo-install-{secrets.token_hex(4)}",
        labels={LABEL: LABEL_VALUE},
        volumes=volumes,
        environment=environment,
    )
    try:
        container.put_archive("/", clone_archive())
        yield container
    finally:
        container.remove(force=True, v=True)


def run_in(
    container: Container,
    script: str,
    *,
    user: str = "root",
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
) -> Ran:
    """`script` by bash as `user` (a login shell for a user other than root)."""
    argv = ["timeout", str(int(timeout)), "bash", "-c", script]
    if user != "root":
        # A login shell of the user's own, as a new terminal gives; only the
        # certificate authorities pass through.
        keep = "--whitelist-environment=SSL_CERT_FILE"
        argv = ["timeout", str(int(timeout)), "su", "--login", keep, user, "-c", script]
    start = time.monotonic()
    status, output = container.exec_run(argv, environment=dict(env or {}))
    assert isinstance(output, bytes)
    seconds = time.monotonic() - start
    return Ran(-1 if status is None else int(status), output.decode(errors="replace"), seconds)


def add_user(container: Container, name: str) -> None:
    """A normal user with bash, the clone in its home, as `git clone` would leave it."""
    script = (
        f"useradd --create-home --shell /bin/bash {name}"
        f" && cp -a /src /home/{name}/neo && chown -R {name}: /home/{name}/neo"
    )
    ran = run_in(container, script)
    assert ran.status == 0, ran.output
