"""A job's network: its policy within the operator's bound, and what the proxy refused.

Through runner.job.run, in the docker sandbox, against the real proxy and
the servers of the network tests' own Docker networks.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from docker import DockerClient

from runner.job import JobSpec, run
from runner.network import Blocked, parse_list, policy_of
from runner.network.proxy import LABEL_EGRESS
from runner.sandbox.docker import LABEL_JOB
from tests.fakes import FakeAnthropicAPI, FakeGitServer, Reply, text, tool_use
from tests.runner.network.conftest import Servers, docker_client, egress_image, servers
from tests.runner.test_job import TOKEN, anthropic_env, data_dir, make_spec, origin, server

__all__ = [
    "anthropic_env",
    "data_dir",
    "docker_client",
    "egress_image",
    "make_spec",
    "origin",
    "server",
    "servers",
]

pytestmark = pytest.mark.usefixtures("anthropic_env")


def tool_result(fake: FakeAnthropicAPI, index: int) -> str:
    content = fake.requests[index].body["messages"][-1]["content"][0]["content"]
    return "".join(part["text"] for part in content)


async def test_a_job_reaches_its_hosts_and_reports_what_was_refused_with_its_command(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    refused = "curl -s -o /dev/null -w '%{http_code}' http://other.test/x"
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": "curl -sS http://web.test/ok"})], "tool_use"),
        Reply([tool_use("t2", "bash", {"command": refused})], "tool_use"),
        Reply([text("Fetched what I could.")]),
    )
    spec = make_spec(
        job_id="job-network",
        sandbox="docker",
        # The repository asks for both; the operator allows one.
        network=policy_of(["web.test", "other.test"], "all"),
        network_ceiling=parse_list("web.test"),
        network_notes=("`setup_network` is ignored: `network` replaces it",),
    )

    result = await run(spec)

    assert result.conclusion == "no_changes", result
    assert tool_result(fake_anthropic, 1).startswith("web GET /ok")
    assert tool_result(fake_anthropic, 2).startswith("403")
    assert result.network_blocked == (Blocked("other.test", refused, "host", "agent"),)
    assert result.network_notes == (
        "`setup_network` is ignored: `network` replaces it",
        "the operator's NEO_NETWORK does not allow other.test",
    )


async def test_network_off_reaches_nothing_and_starts_no_proxy(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    data_dir: Path,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    probe = "curl -s -o /dev/null -w '%{http_code}' http://web.test/; echo; env | grep -ci proxy"
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": probe})], "tool_use"),
        Reply([text("Offline.")]),
    )
    spec = make_spec(job_id="job-offline", sandbox="docker", network=parse_list("off"))

    result = await run(spec)

    assert result.conclusion == "no_changes", result
    assert tool_result(fake_anthropic, 1).startswith("000\n0\n")
    assert result.network_blocked == ()


class HeldGitServer(FakeGitServer):
    """Holds each request until `release` is set (`held`: one waits), then
    answers it, or refuses it as unauthorized with `refuse`."""

    def __init__(self, root: Path, *, refuse: bool = False) -> None:
        super().__init__(root, token=TOKEN)
        self.held, self.release, self.refuse = threading.Event(), threading.Event(), refuse

    def accepts(self, authorization: str | None, path: str, *, push: bool) -> bool:
        self.held.set()
        self.release.wait(120)
        return not self.refuse and super().accepts(authorization, path, push=push)


def proxies(client: DockerClient, job_id: str, **filters: str) -> list[str]:
    """The job's proxy containers (running ones with `status="running"`)."""
    found = client.api.containers(
        all=True, filters={"label": [f"{LABEL_EGRESS}=1", f"{LABEL_JOB}={job_id}"], **filters}
    )
    return [str(c["Id"]) for c in found]


async def test_the_proxy_is_up_before_the_tree_is_cloned(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: DockerClient,
    tmp_path: Path,
    origin: Path,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": "curl -sS http://web.test/ok"})], "tool_use"),
        Reply([text("Fetched it.")]),
    )
    job_id = f"job-launch-{secrets.token_hex(3)}"
    held = HeldGitServer(tmp_path / "served")
    with held:
        spec = make_spec(
            job_id=job_id,
            sandbox="docker",
            network=policy_of(["web.test"]),
            repo_url=held.url("octo/hello.git"),
        )
        job = asyncio.create_task(run(spec))
        try:
            assert await asyncio.to_thread(held.held.wait, 120)
            # The clone waits on the server: the proxy's container starts meanwhile.
            running: list[str] = []
            for _ in range(600):
                running = proxies(docker_client, job_id, status="running")
                if running:
                    break
                await asyncio.sleep(0.1)
        finally:
            held.release.set()
            result = await job

    assert len(running) == 1
    assert result.conclusion == "no_changes", result
    assert tool_result(fake_anthropic, 1).startswith("web GET /ok")
    assert proxies(docker_client, job_id) == []


async def test_a_job_whose_clone_fails_leaves_no_proxy(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: DockerClient,
    tmp_path: Path,
    origin: Path,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    job_id = f"job-launch-failed-{secrets.token_hex(3)}"
    held = HeldGitServer(tmp_path / "served", refuse=True)
    with held:
        spec = make_spec(
            job_id=job_id,
            sandbox="docker",
            network=policy_of(["web.test"]),
            repo_url=held.url("octo/hello.git"),
        )
        job = asyncio.create_task(run(spec))
        assert await asyncio.to_thread(held.held.wait, 120)
        # Refused once the proxy is up, so that there is one to remove.
        for _ in range(600):
            if proxies(docker_client, job_id, status="running"):
                break
            await asyncio.sleep(0.1)
        held.release.set()
        result = await job

    assert result.conclusion == "failed", result
    assert fake_anthropic.requests == []
    assert proxies(docker_client, job_id) == []
    volumes = docker_client.api.volumes(filters={"label": f"{LABEL_JOB}={job_id}"})
    assert (volumes.get("Volumes") or []) == []
