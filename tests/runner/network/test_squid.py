"""squid.conf from policies: what it says, and that the real squid accepts it."""

from __future__ import annotations

import pytest
from docker import DockerClient

from runner.network import OFF, NetworkPolicy, parse_list, plan, policy_of
from runner.network.squid import squid_config

PLANS = {
    "names, wildcards, ports and addresses": plan(
        policy_of(
            ["python", "*.example.com", "example.org:8443", "203.0.113.5", "[2001:db8::1]:8080"]
        ),
        None,
    ),
    "nothing for the agent, anywhere for setup": plan(NetworkPolicy(), None),
    "a ceiling with trusted hosts": plan(
        policy_of(["github", "10.0.0.5:8080"], "all"), parse_list("github,10.0.0.5:8080")
    ),
}


# The Docker host's own addresses outside the ranges refused anyway.
HOST = ["192.0.2.2", "198.18.7.1", "2001:db8::2"]


def _rules(config: str) -> list[str]:
    return [line for line in config.splitlines() if line.startswith("http_access")]


def test_a_request_no_one_allowed_is_refused_before_any_address_is_looked_up() -> None:
    config = squid_config(*_phases("names, wildcards, ports and addresses"))
    rules = _rules(config)

    # The host rules come first: `dst` (which resolves a name) only after them.
    first_dst = next(n for n, rule in enumerate(rules) if "_address" in rule)
    assert all("deny agent_port" in r or "deny setup_port" in r for r in rules[:first_dst])
    assert rules[-5:] == [
        "http_access deny never_address refuse_address",
        "http_access deny private_address refuse_address",
        "http_access allow agent_port",
        "http_access allow setup_port",
        "http_access deny all refuse_host",
    ]
    assert "http_access deny agent_port !CONNECT !read_method refuse_method" in rules
    assert not any(r.startswith("http_access deny setup_port !CONNECT !read") for r in rules)
    # Names match as written, without a reverse lookup of an address.
    assert "acl a1_match dstdomain -n pypi.org" in config
    assert "acl a4_match dstdom_regex -n -i \\.example\\.com$" in config
    assert "acl a6_address dst 203.0.113.5" in config
    assert "acl a6_host all-of literal a6_address" in config


def test_the_operators_hosts_may_reach_private_addresses() -> None:
    config = squid_config(*_phases("a ceiling with trusted hosts"))

    assert "http_access deny private_address !trusted refuse_address" in config
    assert "acl trusted any-of" in config


def test_the_hosts_own_addresses_are_refused_as_private_ones_are() -> None:
    plain = _rules(squid_config(*_phases("names, wildcards, ports and addresses"), HOST))
    trusted = squid_config(*_phases("a ceiling with trusted hosts"), HOST)

    assert plain[-4:-3] == ["http_access deny host_address refuse_address"]
    assert "acl host_address dst 192.0.2.2 198.18.7.1 2001:db8::2" in trusted
    # An operator's host may be on the Docker host (a mirror it runs there).
    assert "http_access deny host_address !trusted refuse_address" in _rules(trusted)
    # Without any outside the ranges, no rule.
    assert "host_address" not in squid_config(*_phases("a ceiling with trusted hosts"))


def test_an_agent_allowed_nothing_is_refused_everything() -> None:
    config = squid_config(*_phases("nothing for the agent, anywhere for setup"))

    assert "http_access deny agent_port refuse_host" in _rules(config)
    assert "acl s_anywhere_tls port 443" in config


def test_no_proxy_runs_for_off() -> None:
    with pytest.raises(ValueError, match="off"):
        squid_config(OFF, OFF)


@pytest.mark.parametrize("name", list(PLANS))
def test_squid_accepts_the_configuration(
    docker_client: DockerClient, egress_image: str, name: str
) -> None:
    config = squid_config(*_phases(name), HOST)

    script = (
        'printf %s "$CONF" > /tmp/squid.conf; squid -k parse -f /tmp/squid.conf 2>&1; echo rc=$?'
    )
    output = docker_client.containers.run(
        egress_image,
        [script],
        entrypoint=["sh", "-c"],
        environment={"CONF": config},
        remove=True,
        read_only=True,
        tmpfs={"/tmp": "size=16m"},
        network_mode="none",
    ).decode()

    assert output.rstrip().endswith("rc=0"), output
    problems = [
        line
        for line in output.splitlines()
        if any(word in line for word in ("ERROR", "FATAL", "Bungled", "WARNING"))
        # squid's own remarks on what this configuration means to do.
        and "HTTP requires the use of Via" not in line
        and "BCP 177" not in line
    ]
    assert problems == []


def _phases(name: str) -> tuple[NetworkPolicy, NetworkPolicy]:
    chosen = PLANS[name]
    return chosen.agent, chosen.setup
