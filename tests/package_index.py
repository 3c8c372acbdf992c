"""A Python package index of tiny wheels built here, served on a Docker network of the test's own.

    with package_index(client, [Package("calc-dep", "1.0")], image=SANDBOX_IMAGE) as index:
        requirements = f"--index-url {index.url}\\ncalc-dep\\n"
        ...
        index.downloads("calc_dep")   # how many times a wheel was fetched

Wheel files already on disk (`wheels=`, e.g. real projects' wheels a bench
downloaded once) are served beside them, under their own names.

Nothing reaches PyPI: the wheels are zip files written by `wheel`, and the
index is `python3 -m http.server` over a PEP 503 tree on port 80, in a
container of the sandbox image on a labelled Docker network that is removed
with it. The network is in 198.18.0.0/15 (set aside for testing, in no
private range), so an egress proxy treats the index as a public host.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import secrets
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.types import IPAMConfig, IPAMPool

__all__ = ["LABEL", "Package", "PackageIndex", "package_index", "wheel", "wheel_project"]

LABEL = "neo.test-index"


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    version: str = "1.0"
    requires: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        return re.sub(r"[-.]+", "_", self.name).lower()


@dataclass(frozen=True, slots=True)
class PackageIndex:
    client: DockerClient
    container: str
    # The network it serves on, and its address there.
    network: str
    url: str

    def downloads(self, module: str = "") -> int:
        """How many wheel downloads (of `module`'s, or any) the index answered.

        uv reads a wheel's metadata with a GET of its own before it downloads
        it (this server ignores ranges), so one install counts two."""
        logs = self.client.api.logs(self.container, stdout=True, stderr=True).decode()
        pattern = rf'"GET /files/{re.escape(module)}[^ ]*\.whl HTTP/1\.[01]" 200'
        return len(re.findall(pattern, logs))


def wheel(package: Package) -> tuple[str, bytes]:
    """A wheel of `package` (its module sets VALUE to its version): file name and bytes."""
    module, version = package.module, package.version
    info = f"{module}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {package.name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in package.requires)
    files = {
        f"{module}/__init__.py": f"VALUE = {version!r}\n",
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: neo-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path, text in files.items():
            content = text.encode()
            archive.writestr(path, content)
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(content)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return f"{module}-{version}-py3-none-any.whl", data.getvalue()


@contextmanager
def package_index(
    client: DockerClient,
    packages: Sequence[Package],
    *,
    image: str,
    wheels: Sequence[Path] = (),
) -> Iterator[PackageIndex]:
    """An index of `packages` and the wheel files `wheels` on a new network; both removed
    when the block ends."""
    suffix = secrets.token_hex(4)
    with tempfile.TemporaryDirectory(prefix="neo-index-") as scratch:
        root = Path(scratch)
        root.chmod(0o755)
        _write_tree(root, packages, wheels)
        name = f"neo-test-index-{suffix}"
        network = public_network(client, name)
        try:
            client.containers.run(
                image,
                ["python3", "-u", "-m", "http.server", "80", "--directory", "/srv"],
                name=name,
                detach=True,
                network=network,
                volumes={str(root): {"bind": "/srv", "mode": "ro"}},
                labels={LABEL: "1"},
                # Port 80 is root's; the tree it serves is read-only.
                user="0",
            )
            _wait_serving(client, name)
            yield PackageIndex(client, name, network, f"http://{name}/simple/")
        finally:
            with suppress(NotFound):
                client.api.remove_container(name, force=True)
            client.api.remove_network(network)


def public_network(client: DockerClient, name: str, label: str = LABEL) -> str:
    """A network labelled `label` on a /24 of 198.18.0.0/15 no other network holds."""
    for _ in range(20):
        subnet = f"198.{18 + secrets.randbelow(2)}.{secrets.randbelow(256)}.0/24"
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)])
        try:
            client.api.create_network(name, driver="bridge", labels={label: "1"}, ipam=ipam)
        except APIError as error:
            if "overlap" in str(error).lower():
                continue
            raise
        return name
    raise RuntimeError("no free /24 in 198.18.0.0/15 for the test's network")


def wheel_project(filename: str) -> tuple[str, str]:
    """A wheel file name's project (normalized, PEP 503) and version."""
    name, version = filename.split("-")[:2]
    return re.sub(r"[-_.]+", "-", name).lower(), version


def _write_tree(root: Path, packages: Sequence[Package], wheels: Sequence[Path]) -> None:
    (root / "files").mkdir()
    built = [wheel(package) for package in packages]
    files = [*built, *((path.name, path.read_bytes()) for path in wheels)]
    links: dict[str, list[str]] = {}
    for filename, data in files:
        (root / "files" / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        project = wheel_project(filename)[0]
        links.setdefault(project, []).append(
            f'<a href="../../files/{filename}#sha256={digest}">{filename}</a>'
        )
    for project, anchors in links.items():
        folder = root / "simple" / project
        folder.mkdir(parents=True)
        body = "<br>\n".join(anchors)
        (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{body}\n</body></html>\n")
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _wait_serving(client: DockerClient, container: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if b"Serving HTTP" in client.api.logs(container, stdout=True, stderr=True):
            return
        time.sleep(0.05)
    raise TimeoutError(f"the package index {container} did not start within {timeout:g}s")
