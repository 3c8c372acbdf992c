"""The benchmarks' package index: wheels of random data, served over HTTP and
HTTPS by a container on a Docker network of its own (198.18.0.0/15, no
outside address), under the name INDEX; the CA that signs its certificate is
written where the sandbox's tree holds it (CA). `bench.egress` installs from it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import secrets
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from docker import DockerClient
from docker.errors import NotFound

from bench.tls import issue
from runner.sandbox.docker import WORKSPACE
from tests.package_index import public_network, wheel_project

INDEX = "index.bench"
LABEL = "neo.bench"

# Where the CA pip and curl trust is, in the sandbox (its tree) and in the
# direct arm's container alike.
CA = f"{WORKSPACE}/bench-ca.pem"
# The index's ways in, each measured: HTTPS is what PyPI and private indexes
# serve (squid tunnels it with CONNECT); HTTP goes through squid's store.
SCHEMES = ("http", "https")

# HTTP on 80 and HTTPS on 443 (the certificate in /tls); the handshake in the
# request's thread, not in accept, so one connection's holds no other.
# TCP_NODELAY, as nginx and CDNs set it: with Nagle, a response's small
# writes after TLS 1.3's session tickets wait for the client's delayed ACK.
# Its protocol is its argument: HTTP/1.1 keeps a connection for the next
# request, as PyPI and every index server do; HTTP/1.0 closes it after each.
SERVER = r"""
import functools, http.server, ssl, sys, threading
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/srv")
handler.func.log_message = lambda *args: None
handler.func.disable_nagle_algorithm = True
handler.func.protocol_version = sys.argv[1]
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tls/server.pem", "/tls/server.key")

class TLSServer(http.server.ThreadingHTTPServer):
    def finish_request(self, request, address):
        with context.wrap_socket(request, server_side=True) as tls:
            super().finish_request(tls, address)

plain = http.server.ThreadingHTTPServer(("", 80), handler)
threading.Thread(target=plain.serve_forever, daemon=True).start()
TLSServer(("", 443), handler).serve_forever()
"""


def wheel(name: str, size: int) -> tuple[str, bytes]:
    """A wheel of module `name` carrying `size` bytes of random data."""
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{name}/payload.bin": os.urandom(size),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: neo-bench\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as archive:
        for path, content in files.items():
            archive.writestr(path, content)
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(content)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return f"{name}-1.0-py3-none-any.whl", data.getvalue()


def random_wheels(names: list[str], size: int) -> list[tuple[str, str, bytes]]:
    """A wheel of `size` random bytes for each of `names`: (project, file name, bytes)."""
    return [(name, *wheel(name, size)) for name in names]


def real_wheels(paths: list[Path]) -> list[tuple[str, str, bytes]]:
    """The wheels at `paths` (a real project's): (project, file name, bytes)."""
    return [(wheel_project(path.name)[0], path.name, path.read_bytes()) for path in paths]


def write_index(root: Path, wheels: list[tuple[str, str, bytes]], transfer: int) -> None:
    """The index's tree: each wheel under files/, a page for each project
    under simple/ linking its wheel with its hash, and `transfer` random bytes."""
    (root / "files").mkdir()
    for project, filename, data in wheels:
        (root / "files" / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        page = root / "simple" / project
        page.mkdir(parents=True)
        link = f'<a href="/files/{filename}#sha256={digest}">{filename}</a>'
        (page / "index.html").write_text(f"<html><body>{link}</body></html>\n")
    (root / "blob.bin").write_bytes(os.urandom(transfer))
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def write_credentials(tree: Path, tls: Path) -> None:
    """A new CA into the sandbox's `tree` (at CA there), the index's certificate
    and key into `tls`: readable by the index's root and the sandbox's uid."""
    issued = issue(INDEX)
    for path, text in (
        (tree / Path(CA).name, issued.ca),
        (tls / "server.pem", issued.certificate),
        (tls / "server.key", issued.key),
    ):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text)
        path.chmod(0o644)


@contextmanager
def served_index(
    client: DockerClient, image: str, root: Path, tls: Path, *, keep_alive: bool = True
) -> Iterator[str]:
    """The index in `root` on a network of its own, over HTTP and HTTPS (the
    server's certificate and key in `tls`), keeping connections alive unless
    told not to; the network's name."""
    name = f"neo-bench-index-{secrets.token_hex(3)}"
    network = public_network(client, name, LABEL)
    try:
        api = client.api
        api.create_container(
            image,
            entrypoint=["python3", "-c", SERVER, "HTTP/1.1" if keep_alive else "HTTP/1.0"],
            name=name,
            user="0",
            labels={LABEL: "1"},
            host_config=api.create_host_config(
                network_mode=network,
                binds={
                    str(root): {"bind": "/srv", "mode": "ro"},
                    str(tls): {"bind": "/tls", "mode": "ro"},
                },
            ),
        )
        api.disconnect_container_from_network(name, network)
        api.connect_container_to_network(name, network, aliases=[INDEX])
        api.start(name)
        yield network
    finally:
        with suppress(NotFound):
            client.api.remove_container(name, force=True)
        client.api.remove_network(network)
