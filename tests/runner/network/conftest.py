"""The real proxy's test bed: Docker networks of the tests' own, with HTTP servers on them.

`public` is a network in 198.18.0.0/15 (set aside for testing, in no
private range), where `web.test` and `other.test` answer; `private` is one
of Docker's own (a private range), where `private.test` answers. A proxy
joins both, as it would join the outside. Nothing here reaches an outside
address.
"""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from docker import DockerClient
from docker.errors import APIError, ImageNotFound
from docker.types import IPAMConfig, IPAMPool

from runner.network.proxy import EGRESS_IMAGE
from tests.runner.sandbox.conftest import BUILD_IMAGES, SANDBOX_IMAGE, docker_client

__all__ = [
    "Servers",
    "address_on",
    "docker_client",
    "egress_image",
    "pattern",
    "public_network",
    "servers",
]

LABEL = "neo.test"

# An HTTP/1.1 server on 80, 443, 8000 and 8443 (plain HTTP on all: CONNECT
# only needs a port to tunnel to). It answers "<name> <method> <path>";
# /redirect?to=URL with a 302 to URL; /bytes/N with N bytes of `pattern(N)`;
# a request with a body with the body's sha256 too; /slow/S/... reads a body
# 64 KiB at a time, S seconds apart, as a server slower than its client does.
SERVER = r"""
import hashlib, http.server, sys, threading, time
name = sys.argv[1]
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.path.startswith("/slow/"):
            pause = float(self.path.split("/")[2])
            parts = []
            while length:
                time.sleep(pause)
                parts.append(self.rfile.read(min(length, 65536)))
                length -= len(parts[-1])
            body = b"".join(parts)
        else:
            body = self.rfile.read(length) if length else b""
        if self.path.startswith("/bytes/"):
            size = int(self.path[7:])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = bytes(range(256)) * 4096
            while size:
                self.wfile.write(block[:size])
                size -= min(size, len(block))
            return
        if body:
            body = hashlib.sha256(body).hexdigest().encode() + b"\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = ("%s %s %s\n" % (name, self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = do_DELETE = answer
    def log_message(self, *args):
        pass
for port in (80, 443, 8000, 8443):
    server = http.server.ThreadingHTTPServer(("", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("serving", flush=True)
threading.Event().wait()
"""


def pattern(size: int) -> bytes:
    """What /bytes/`size` answers."""
    return (bytes(range(256)) * (size // 256 + 1))[:size]


@dataclass(frozen=True)
class Servers:
    public: str  # network names
    private: str
    web: str  # web.test's address on `public`
    other: str
    private_address: str

    @property
    def networks(self) -> tuple[str, str]:
        return (self.public, self.private)


@pytest.fixture(scope="session")
def egress_image(docker_client: DockerClient) -> str:
    """neo-egress:local, built by scripts/build-images when missing."""
    try:
        docker_client.images.get(EGRESS_IMAGE)
    except ImageNotFound:
        built = subprocess.run(
            [str(BUILD_IMAGES)], capture_output=True, text=True, timeout=3600, check=False
        )
        if built.returncode != 0:
            output = (built.stdout + built.stderr)[-3000:]
            pytest.fail(
                f"scripts/build-images failed ({built.returncode}):\n{output}", pytrace=False
            )
    return EGRESS_IMAGE


@pytest.fixture(scope="session")
def servers(docker_client: DockerClient, egress_image: str) -> Iterator[Servers]:
    tag = secrets.token_hex(3)
    labels = {LABEL: f"network-{tag}"}
    api = docker_client.api
    created: list[str] = []
    networks: list[str] = []
    try:
        public = public_network(docker_client, f"neo-test-public-{tag}", labels)
        networks.append(public)
        private = f"neo-test-private-{tag}"
        api.create_network(private, driver="bridge", labels=labels)
        networks.append(private)
        addresses = {}
        for name, network in (("web", public), ("other", public), ("private", private)):
            container = f"neo-test-{name}-{tag}"
            api.create_container(
                SANDBOX_IMAGE,
                entrypoint=["python3", "-c", SERVER, name],
                name=container,
                user="0",
                labels=labels,
                host_config=api.create_host_config(network_mode=network, init=True),
            )
            created.append(container)
            # Joined again with the name it answers to on the network.
            api.disconnect_container_from_network(container, network)
            api.connect_container_to_network(container, network, aliases=[f"{name}.test"])
            api.start(container)
            addresses[name] = address_on(docker_client, container, network)
        for container in created:
            _wait_serving(docker_client, container)
        yield Servers(public, private, addresses["web"], addresses["other"], addresses["private"])
    finally:
        for container in created:
            api.remove_container(container, force=True)
        for network in networks:
            api.remove_network(network)


def public_network(client: DockerClient, name: str, labels: dict[str, str]) -> str:
    """A network in 198.18.0.0/15, on a /24 no other network holds; the host is its .1."""
    api = client.api
    for _ in range(20):
        third = secrets.randbelow(256)
        subnet = f"198.{18 + secrets.randbelow(2)}.{third}.0/24"
        gateway = subnet.replace(".0/24", ".1")
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet, gateway=gateway)])
        try:
            api.create_network(name, driver="bridge", labels=labels, ipam=ipam)
        except APIError as error:
            if "overlap" in str(error).lower():
                continue
            raise
        return name
    raise RuntimeError("no free /24 in 198.18.0.0/15 for the test's network")


def address_on(client: DockerClient, container: str, network: str) -> str:
    info = client.api.inspect_container(container)
    return str(info["NetworkSettings"]["Networks"][network]["IPAddress"])


def _wait_serving(client: DockerClient, container: str) -> None:
    for _ in range(300):
        if b"serving" in client.api.logs(container):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{container} did not start serving")
