"""A job's network: its policy within the operator's bound, and what the proxy refused.

Through runner.job.run, in the docker sandbox, against the real proxy and
the servers of the network tests' own Docker networks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.job import JobSpec, run
from runner.network import Blocked, parse_list, policy_of
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.runner.network.conftest import Servers, docker_client, egress_image, servers
from tests.runner.test_job import anthropic_env, data_dir, make_spec, origin, server

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
