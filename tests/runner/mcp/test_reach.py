"""runner.mcp.reach: a URL server is reached only as the job's network policy allows,
applied on the host, and its addresses checked as the connection is made."""

from __future__ import annotations

import pytest

from runner.mcp import McpSettings, Operator, Remote, ServerSpec
from runner.mcp.connect import Where
from runner.mcp.gateway import Gateway, Skipped
from runner.mcp.reach import address_refusal, url_refusal
from runner.network import NetworkPolicy, parse_list, plan, policy_of
from runner.tools.base import ToolContext
from tests.runner.mcp.conftest import HttpProbe

NOBODY = Operator()


@pytest.mark.parametrize(
    ("url", "allow", "methods", "refusal"),
    [
        ("https://mcp.sentry.example/mcp", ["mcp.sentry.example"], "read", None),
        ("https://mcp.sentry.example/mcp", ["*.sentry.example"], "read", None),
        (
            "https://mcp.sentry.example/mcp",
            ["sentry.example"],
            "read",
            "the job's network does not allow mcp.sentry.example (add it to `network.allow`, or"
            " the operator to NEO_MCP_URLS)",
        ),
        (
            "https://mcp.sentry.example:8443/mcp",
            ["mcp.sentry.example"],
            "read",
            "the job's network does not allow mcp.sentry.example:8443 (add it to"
            " `network.allow`, or the operator to NEO_MCP_URLS)",
        ),
        ("https://mcp.sentry.example:8443/mcp", ["mcp.sentry.example:8443"], "read", None),
        (
            "http://mcp.sentry.example/mcp",
            ["mcp.sentry.example"],
            "read",
            "plain HTTP to mcp.sentry.example needs `network.methods: all`; prefer https",
        ),
        ("http://mcp.sentry.example/mcp", ["mcp.sentry.example"], "all", None),
        ("https://203.0.113.5/mcp", ["203.0.113.5"], "read", None),
    ],
)
def test_a_url_passes_the_policy_as_the_proxy_would_pass_it(
    url: str, allow: list[str], methods: str, refusal: str | None
) -> None:
    policy = policy_of(allow, "all" if methods == "all" else "read")

    assert url_refusal(url, policy, NOBODY) == refusal


def test_off_refuses_every_url_but_those_the_operator_vouches_for() -> None:
    off = NetworkPolicy(off=True)
    operator = Operator(urls=("http://127.0.0.1:8931/",))

    assert url_refusal("https://mcp.example.com/mcp", off, operator) is not None
    assert url_refusal("http://127.0.0.1:8931/mcp", off, operator) is None


@pytest.mark.parametrize(
    ("address", "trusted", "refused"),
    [
        ("203.0.113.5", False, None),
        ("127.0.0.1", True, "127.0.0.1 is a loopback, link-local, multicast or reserved address"),
        ("::1", True, "::1 is a loopback, link-local, multicast or reserved address"),
        (
            "::ffff:127.0.0.1",
            True,
            "::ffff:127.0.0.1 is a loopback, link-local, multicast or reserved address",
        ),
        (
            "169.254.169.254",
            True,
            "169.254.169.254 is a loopback, link-local, multicast or reserved address",
        ),
        (
            "10.1.2.3",
            False,
            "10.1.2.3 is a private address, which only the operator's NEO_NETWORK can open",
        ),
        ("10.1.2.3", True, None),
        (
            "fd00::1",
            False,
            "fd00::1 is a private address, which only the operator's NEO_NETWORK can open",
        ),
    ],
)
def test_an_address_is_refused_as_the_proxy_refuses_it(
    address: str, trusted: bool, refused: str | None
) -> None:
    assert address_refusal(address, trusted=trusted) == refused


async def started(server: Remote, policy: NetworkPolicy, **where: object) -> Gateway:
    settings = McpSettings(servers=(ServerSpec("web", server, ("echo",)),), github=False)
    gateway = Gateway(settings, Where(NOBODY, policy, job_id="reach-test", **where))  # type: ignore[arg-type]
    await gateway.__aenter__()
    await gateway.ready()
    return gateway


async def test_a_private_address_the_operator_listed_is_reached_through_the_checked_client(
    http_probe: HttpProbe,
) -> None:
    entry = f"{http_probe.bridge_host}:{http_probe.port}"
    network = plan(policy_of([entry], "all"), parse_list(entry))

    gateway = await started(Remote(http_probe.bridge), network.agent)
    try:
        (echo,) = await gateway.ready()
        output = await echo({"text": "through the policy"}, ToolContext("c", print))
    finally:
        await gateway.__aexit__(None, None, None)

    assert isinstance(output.content, str)
    assert "through the policy" in output.content


async def test_a_private_address_only_the_repository_listed_is_refused(
    http_probe: HttpProbe,
) -> None:
    entry = f"{http_probe.bridge_host}:{http_probe.port}"
    network = plan(policy_of([entry], "all"), None)

    gateway = await started(Remote(http_probe.bridge), network.agent)
    await gateway.__aexit__(None, None, None)

    assert gateway.skipped == (
        Skipped(
            "web",
            f"the job's network does not allow {entry} (add it to `network.allow`, or the"
            " operator to NEO_MCP_URLS)",
        ),
    )


async def test_a_name_the_policy_allows_that_resolves_to_loopback_is_refused_when_connecting(
    http_probe: HttpProbe,
) -> None:
    async def rebound(host: str, port: int) -> list[str]:
        # What a hostile DNS answers for a name the repository was allowed.
        return ["127.0.0.1"] if host == "mcp.rebind.test" else []

    policy = policy_of([f"mcp.rebind.test:{http_probe.port}"], "all")
    url = f"http://mcp.rebind.test:{http_probe.port}/mcp"

    gateway = await started(Remote(url), policy, resolve=rebound)
    await gateway.__aexit__(None, None, None)

    (skipped,) = gateway.skipped
    assert skipped.reason == (
        "cannot reach it: refused mcp.rebind.test: 127.0.0.1 is a loopback, link-local,"
        " multicast or reserved address"
    )
