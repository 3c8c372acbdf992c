"""Real MCP servers for the gateway's tests, shared per session: no mocks.

- the probe (`servers/probe.py`, written with the SDK) as a stdio command;
- the same probe over Streamable HTTP, served by uvicorn in a thread on
  loopback and on the host's address on Docker's default bridge (a private
  address, for the network policy's checked path);
- the probe in a container image built here from `neo-sandbox:local` and the
  SDK installed from uv's cache (no registry);
- the reference `mcp-server-time` from PyPI, a dev dependency, as a command.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound
from mcp.server.transport_security import TransportSecuritySettings

from tests.docker_bridge import bridge_gateway
from tests.runner.sandbox.conftest import SANDBOX_IMAGE, docker_client

__all__ = [
    "PROBE",
    "HttpProbe",
    "docker_client",
    "http_probe",
    "probe_image",
    "tasks_left",
    "time_server",
]

SERVERS = Path(__file__).parent / "servers"
PROBE = (sys.executable, str(SERVERS / "probe.py"))
# A server that reads its stdin and never answers: not even the first request.
SILENT = (sys.executable, "-c", "import sys; sys.stdin.buffer.read()")
LABEL = "neo.test"
DOCKERFILE = (
    f"FROM {SANDBOX_IMAGE}\n"
    "USER root\n"
    "COPY lib /opt/mcp-lib\n"
    "COPY probe.py /opt/probe.py\n"
    # Compiled once here: a server's start is not the SDK's compilation (40 s).
    "RUN python3 -m compileall -q /opt/mcp-lib /opt/probe.py\n"
    "USER neo\n"
    "ENV PYTHONPATH=/opt/mcp-lib\n"
    'ENTRYPOINT ["python3", "/opt/probe.py"]\n'
)


@dataclass(frozen=True, slots=True)
class HttpProbe:
    """The probe over Streamable HTTP: on loopback, and on Docker's bridge address."""

    loopback: str
    bridge: str
    bridge_host: str
    port: int


@pytest.fixture(scope="session")
def http_probe() -> Iterator[HttpProbe]:
    from tests.runner.mcp.servers.probe import server

    app = server.streamable_http_app(
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    client = __import__("docker").from_env()
    try:
        bridge = bridge_gateway(client)
    finally:
        client.close()
    sockets = [_listening("127.0.0.1", 0)]
    port = sockets[0].getsockname()[1]
    sockets.append(_listening(bridge, port))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvi = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(uvi.serve(sockets=sockets)), daemon=True, name="http-probe"
    )
    thread.start()
    while not uvi.started:
        if not thread.is_alive():
            pytest.fail("the HTTP probe did not start", pytrace=False)
        threading.Event().wait(0.02)
    yield HttpProbe(
        loopback=f"http://127.0.0.1:{port}/mcp",
        bridge=f"http://{bridge}:{port}/mcp",
        bridge_host=bridge,
        port=port,
    )
    uvi.should_exit = True
    thread.join(10)
    for sock in sockets:
        sock.close()


def _listening(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


@pytest.fixture(scope="session")
def probe_image(docker_client: DockerClient) -> str:
    """`neo-mcp-probe:<hash>`: the probe and the SDK over the sandbox image, built once."""
    source = (SERVERS / "probe.py").read_bytes()
    version = importlib.metadata.version("mcp")
    base = str(docker_client.images.get(SANDBOX_IMAGE).id)
    digest = hashlib.sha256(
        b"\0".join([source, DOCKERFILE.encode(), version.encode(), base.encode()])
    )
    tag = f"neo-mcp-probe:{digest.hexdigest()[:12]}"
    try:
        docker_client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    with tempfile.TemporaryDirectory(prefix="neo-mcp-image-") as context:
        root = Path(context)
        uv = shutil.which("uv") or "uv"
        installed = subprocess.run(
            [uv, "pip", "install", "--quiet", "--target", str(root / "lib"),
             "--python", sys.executable, f"mcp=={version}"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if installed.returncode != 0:
            pytest.fail(f"cannot install the SDK for the image: {installed.stderr[-2000:]}")
        shutil.copy(SERVERS / "probe.py", root / "probe.py")
        (root / "Dockerfile").write_text(DOCKERFILE)
        docker_client.images.build(
            path=context, tag=tag, labels={LABEL: "mcp-probe"}, rm=True, pull=False
        )
    # This fixture's earlier builds (another probe, another sandbox image) go.
    for old in docker_client.images.list(filters={"label": f"{LABEL}=mcp-probe"}):
        if tag not in old.tags:
            with contextlib.suppress(DockerException):
                docker_client.images.remove(str(old.id), noprune=False)
    return tag


@pytest.fixture(scope="session")
def time_server() -> str:
    """The directory holding the reference `mcp-server-time` command."""
    found = shutil.which("mcp-server-time", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.fail("mcp-server-time is missing: uv sync installs it (a dev dependency)")
    return os.path.dirname(found)


def tasks_left() -> list[str]:
    """The stacks of the running loop's tasks other than the current one."""
    found: list[str] = []
    for task in asyncio.all_tasks():
        if task is asyncio.current_task() or task.done():
            continue
        stack = io.StringIO()
        task.print_stack(file=stack)
        found.append(stack.getvalue())
    return found
