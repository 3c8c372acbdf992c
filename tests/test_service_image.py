"""The service image that scripts/build-images makes, started on a real engine.

One container runs the image as the README tells (the settings of an env
file, the key's newlines as `\\n`; the Docker socket with its group; the port
published on the host) against the fake GitHub, which the container reaches
through a relay on the bridge's gateway. These tests never skip: scripts/test
builds the image first, so a missing image fails them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import httpx
import pytest
from docker.errors import DockerException, ImageNotFound
from docker.models.containers import Container
from docker.models.images import Image

from tests.bot.serving import SECRET, corpus, headers
from tests.docker_bridge import bridge_gateway
from tests.fakes import FakeGitHub, rsa_private_key_pem

REPO = Path(__file__).resolve().parents[1]
IMAGE = "neo-service:local"
CA_FILE = "host-ca-certificates.crt"
PORT = "8000/tcp"
# Generous: the engine and two shared cores may be busy with other tests.
HEALTHY_WITHIN = 180.0


class Relay:
    """TCP from `host` (an address containers reach) to 127.0.0.1:`target`.

    The fakes listen on loopback only; a container on the default bridge
    reaches the host at the bridge's gateway address instead.
    """

    def __init__(self, host: str, target: int) -> None:
        self._host = host
        self._target = target
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="relay", daemon=True)
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self.port = 0

    def __enter__(self) -> Relay:
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, self._host, 0)
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        for pipe in self._pipes:
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._pipes.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target)
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        except OSError:
            writer.close()
        finally:
            self._pipes.discard(task)


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    finally:
        sink.close()


@dataclass(frozen=True)
class Service:
    container: Container
    url: str  # the published port, from the host
    github: FakeGitHub

    def logs(self) -> str:
        return str(self.container.logs(stdout=True, stderr=True).decode(errors="replace"))


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=120)
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


def docker_socket() -> Path:
    """The engine's unix socket, which the service gets as the README says."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.fail(f"the service image test needs a local engine on a unix socket, not {host}")
    return Path(host.removeprefix("unix://"))


@pytest.fixture(scope="module")
def service(client: docker.DockerClient, image: Image) -> Iterator[Service]:
    """The image running against the fake GitHub, healthy by Docker's own check."""
    key = rsa_private_key_pem()
    gateway = bridge_gateway(client)
    socket = docker_socket()
    app_id = 100_000 + secrets.randbelow(900_000)
    with (
        FakeGitHub(app_id=app_id, private_key_pem=key) as github,
        Relay(gateway, httpx.URL(github.base_url).port or 80) as relay,
    ):
        container = client.containers.run(
            IMAGE,
            detach=True,
            name=f"neo-service-test-{secrets.token_hex(4)}",
            environment={
                "NEO_GITHUB_APP_ID": str(app_id),
                # One line, as `neo setup-app` writes it for `docker run --env-file`.
                "NEO_GITHUB_PRIVATE_KEY": key.strip().replace("\n", "\\n"),
                "NEO_WEBHOOK_SECRET": SECRET,
                "NEO_GITHUB_API_URL": f"http://host.docker.internal:{relay.port}",
                "NEO_WORKERS": "0",
            },
            extra_hosts={"host.docker.internal": gateway},
            volumes={
                str(socket): {"bind": "/var/run/docker.sock", "mode": "rw"},
            },
            group_add=[str(socket.stat().st_gid)],
            ports={PORT: ("127.0.0.1", 0)},  # 0: a free port
        )
        try:
            wait_healthy(container)
            container.reload()
            published = container.ports[PORT]
            assert published, container.ports
            host_port = published[0]["HostPort"]
            yield Service(container, f"http://127.0.0.1:{host_port}", github)
        finally:
            container.remove(force=True, v=True)


def exec_in(container: Container, argv: list[str]) -> tuple[int, str]:
    """Run `argv`, a read-only command that prints, in the container as its
    user; exit status and output.

    Asked again (twice at most) when it exits 0 having printed nothing: the
    engine sometimes loses a quick exec's output (moby/moby#27289, seen once
    in a fresh-clone run as `stat` printing nothing)."""
    for _ in range(3):
        status, output = container.exec_run(argv)
        assert isinstance(output, bytes)
        text = output.decode(errors="replace")
        if status != 0 or text:
            break
    return (-1 if status is None else int(status)), text


def wait_healthy(container: Container) -> None:
    """Until Docker's HEALTHCHECK says healthy; fail on unhealthy or an exit."""
    deadline = time.monotonic() + HEALTHY_WITHIN
    while True:
        container.reload()
        state = container.attrs["State"]
        health = state.get("Health", {}).get("Status")
        if health == "healthy":
            return
        if health == "unhealthy" or not state["Running"]:
            logs = container.logs().decode(errors="replace")
            pytest.fail(f"service is {health}, exit code {state['ExitCode']}:\n{logs}")
        if time.monotonic() > deadline:
            pytest.fail(f"service not healthy after {HEALTHY_WITHIN} s: {health}")
        time.sleep(0.25)


def test_image_runs_neo_serve_unprivileged_with_a_health_check(image: Image) -> None:
    config = image.attrs["Config"]
    assert config["User"] == "neo"
    assert config["Entrypoint"][:2] == ["/usr/bin/tini", "--"]
    assert config["Entrypoint"][2:] == ["neo", "serve", "--host", "0.0.0.0", "--port", "8000"]
    assert PORT in config["ExposedPorts"]
    assert "/var/lib/neo" in config["Volumes"]
    assert "NEO_DATA_DIR=/var/lib/neo" in config["Env"]
    assert "/healthz" in " ".join(config["Healthcheck"]["Test"])
    assert re.fullmatch(r"[0-9a-f]{64}", config["Labels"]["neo.context-sha"])


def test_turns_healthy_and_answers_healthz_on_the_published_port(service: Service) -> None:
    response = httpx.get(f"{service.url}/healthz", timeout=10)

    assert response.status_code == 200
    assert response.json() == {"ok": True}
    health = service.container.attrs["State"]["Health"]
    assert health["Status"] == "healthy"
    assert health["Log"][-1]["ExitCode"] == 0


def test_authenticated_as_the_app_through_the_configured_api_url(service: Service) -> None:
    app_calls = [r for r in service.github.requests if r.route == "/app"]

    assert app_calls, service.logs()
    assert all(call.auth == "jwt" and call.status == 200 for call in app_calls)
    started = [json.loads(line) for line in service.logs().splitlines() if '"started"' in line]
    assert started == [{"event": "started", "app": "neo-test[bot]", "queue": "sqlite"}]


def test_no_process_runs_as_root(service: Service) -> None:
    # `docker top` runs ps on the host and needs its pid column.
    top = service.container.top(ps_args="-o pid,uid,args")
    uid = top["Titles"].index("UID")
    rows = [(row[uid], row[-1]) for row in top["Processes"]]

    assert any("neo serve" in args for _, args in rows), rows
    assert all(owner == "1000" for owner, _ in rows), rows


def test_a_signed_ping_is_answered(service: Service) -> None:
    ping = next(payload for event, payload in corpus() if event == "ping")
    body = json.dumps(ping).encode()

    response = httpx.post(
        f"{service.url}/api/github/webhooks",
        content=body,
        headers=headers("ping", body),
        timeout=10,
    )
    unsigned = httpx.post(
        f"{service.url}/api/github/webhooks",
        content=body,
        headers={**headers("ping", body), "x-hub-signature-256": "sha256=" + "0" * 64},
        timeout=10,
    )

    assert response.status_code == 200, response.text
    assert unsigned.status_code == 401


def test_the_queue_lives_in_the_data_volume(service: Service) -> None:
    status, output = exec_in(service.container, ["stat", "-c", "%U %n", "/var/lib/neo/neo.db"])

    assert status == 0, output
    assert output.split() == ["neo", "/var/lib/neo/neo.db"]
    mounts = {m["Destination"]: m["Type"] for m in service.container.attrs["Mounts"]}
    assert mounts["/var/lib/neo"] == "volume"


def test_the_service_user_reaches_the_engine_through_the_socket(service: Service) -> None:
    probe = "import docker; print(docker.from_env().ping())"
    status, output = exec_in(service.container, ["python3", "-c", probe])

    assert (status, output.strip()) == (0, "True"), output
    # The start-up sweep of orphaned sandboxes went through as well.
    assert "sweep_skipped" not in service.logs()


def test_the_build_context_holds_every_package_of_the_wheel() -> None:
    script = (REPO / "scripts" / "build-images").read_text()
    sent = re.search(r"^service_sources=\(([^)]*)\)", script, re.MULTILINE)
    assert sent, "scripts/build-images names no service_sources"
    admitted = [
        line.removeprefix("!")
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    packages = wheel["targets"]["wheel"]["packages"]

    # The one file that is no source: build-images writes the host's certificate
    # authorities into its own context, never into the tree (a hand-run build
    # supplies one, empty or not).
    assert CA_FILE in admitted
    assert f'-C "$ca_dir" {CA_FILE}' in script
    assert sorted(sent.group(1).split()) == sorted(
        ["Dockerfile", *(name for name in admitted if name != CA_FILE)]
    )
    assert set(packages) <= set(admitted)
    dockerfile = (REPO / "Dockerfile").read_text()
    for package in packages:  # copied into the build, and from it into the image
        assert f"COPY {package} ./{package}\n" in dockerfile
        assert f'"$site/{package}"' in dockerfile


def test_second_build_reuses_the_image(image: Image) -> None:
    result = subprocess.run(
        [str(REPO / "scripts" / "build-images")],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"{IMAGE} reused" in result.stdout
    assert f"{IMAGE} built" not in result.stdout
