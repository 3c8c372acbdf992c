"""The proxy's access log, parsed, and refusals traced to their commands (pure)."""

from __future__ import annotations

import pytest

from runner.network import policy_of, setup_policy
from runner.network.accesses import (
    UNKNOWN_COMMAND,
    Access,
    Blocked,
    blocked_requests,
    command_address,
    command_of_address,
    parse_line,
)
from runner.sandbox import exec_server


@pytest.mark.parametrize("ident", [None, 0, 1, 2, 255, 256, 65_535, 70_000, (1 << 24) - 2])
def test_the_relay_and_the_parser_agree_on_command_addresses(ident: int | None) -> None:
    # The exec server cannot import Neo: its copy of the encoding must match.
    assert exec_server.command_address(ident) == command_address(ident)
    assert command_of_address(command_address(ident)) == ident


def test_ids_past_the_range_are_unknown() -> None:
    assert command_address(1 << 24) == "10.0.0.0"
    assert command_address(-1) == "10.0.0.0"
    assert command_of_address("10.0.0.0") is None
    assert command_of_address("not an address") is None


def test_a_line_is_parsed_into_an_access() -> None:
    line = "1796239620.113 10.0.0.8 GET Other.Test 8000 TCP_DENIED 403 agent"

    assert parse_line(line) == Access(
        time=1796239620.113,
        command=7,
        method="GET",
        host="other.test",
        port=8000,
        denied=True,
        phase="agent",
    )
    # A client that read the refusal and left before squid was done with it.
    aborted = parse_line("1.5 10.0.0.2 CONNECT pypi.org 22 TCP_DENIED_ABORTED 403 agent")
    assert aborted is not None
    assert aborted.denied
    for status in ("TCP_MISS", "TCP_MISS_ABORTED", "TCP_TUNNEL_ABORTED", "NONE_NONE_ABORTED"):
        access = parse_line(f"1.5 10.0.0.2 GET pypi.org 80 {status} 200 agent")
        assert access is not None
        assert not access.denied
    tunnel = parse_line("1.5 10.0.0.2 CONNECT pypi.org 443 TCP_TUNNEL 200 setup")
    assert tunnel is not None
    assert not tunnel.denied
    assert tunnel.phase == "setup"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "1796239610.633 127.0.0.1 - - - NONE_NONE 0 -",  # a probe without a header
        "1.5 127.0.0.1 GET pypi.org 80 TCP_DENIED 403 agent",  # not through the relay
        "1.5 10.0.0.2 GET pypi.org 80 TCP_DENIED 403",
        "1.5 10.0.0.2 GET pypi.org 80 TCP_DENIED 403 agent extra",
        "1.5 10.0.0.2 GET - - TCP_DENIED 403 agent",
        "1.5 10.0.0.2 GET pypi.org 80 TCP_DENIED 403 -",
        "soon 10.0.0.2 GET pypi.org 80 TCP_DENIED 403 agent",
        "2026/12/02 19:26:42| squid says something on stdout",
    ],
)
def test_what_is_not_an_access_line_is_skipped(line: str) -> None:
    assert parse_line(line) is None


def _access(
    command: int | None,
    method: str,
    host: str,
    port: int,
    *,
    denied: bool = True,
    phase: str = "agent",
) -> Access:
    return Access(
        time=1.0,
        command=command,
        method=method,
        host=host,
        port=port,
        denied=denied,
        phase="setup" if phase == "setup" else "agent",
    )


def test_each_refused_host_once_with_the_first_command_and_why() -> None:
    agent = policy_of(["web.test", "cdn.test"], "read")
    setup = setup_policy(agent, None)
    commands = {3: "pip install left-pad", 4: "curl -X POST http://web.test/", 5: "curl x"}
    accesses = [
        _access(3, "CONNECT", "other.test", 443),
        _access(5, "CONNECT", "other.test", 443),
        _access(4, "GET", "web.test", 80, denied=False),
        _access(4, "POST", "web.test", 80),
        _access(None, "GET", "web.test", 8080),
        _access(5, "GET", "private.test", 80, phase="setup"),
        # Allowed by the policy: what was refused is the address its name resolved to.
        _access(9, "CONNECT", "cdn.test", 443),
    ]

    found = blocked_requests(accesses, agent=agent, setup=setup, command=commands.get)

    assert found == (
        Blocked("other.test", "pip install left-pad", "host", "agent", attempts=2),
        Blocked("web.test", "curl -X POST http://web.test/", "method", "agent"),
        Blocked("web.test:8080", UNKNOWN_COMMAND, "host", "agent"),
        Blocked("private.test", "curl x", "address", "setup"),
        Blocked("cdn.test", UNKNOWN_COMMAND, "address", "agent"),
    )
