"""The network policy, pure: entries, bounds, what each phase may reach."""

from __future__ import annotations

import pytest

from runner.network import (
    ECOSYSTEMS,
    OFF,
    BadEntry,
    Ecosystem,
    Host,
    NetworkPolicy,
    bound,
    default_policy,
    job_plan,
    parse_entry,
    parse_list,
    plan,
    policy_of,
    setup_policy,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("example.com", Host("name", "example.com")),
        ("  Example.COM.  ", Host("name", "example.com")),
        ("api.example.com:8443", Host("name", "api.example.com", 8443)),
        ("*.example.com", Host("wildcard", "example.com")),
        ("*.example.com:8080", Host("wildcard", "example.com", 8080)),
        ("203.0.113.5", Host("address", "203.0.113.5")),
        ("203.0.113.5:8000", Host("address", "203.0.113.5", 8000)),
        ("2001:db8::1", Host("address", "2001:db8::1")),
        ("[2001:DB8::1]", Host("address", "2001:db8::1")),
        ("[2001:db8::1]:8080", Host("address", "2001:db8::1", 8080)),
        ("10.1.2.3", Host("address", "10.1.2.3")),
        ("my_host.internal.example", Host("name", "my_host.internal.example")),
    ],
)
def test_hosts_are_parsed_to_one_form(text: str, expected: Host) -> None:
    assert parse_entry(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pyhton", "unknown ecosystem 'pyhton' (one of: python, node, go, rust, ruby, github;"),
        ("localhost", "unknown ecosystem 'localhost'"),
        ("https://pypi.org", "'https://pypi.org' is a URL: write its host alone"),
        ("pypi.org/simple", "'pypi.org/simple' is not a host"),
        ("user@pypi.org", "'user@pypi.org' is not a host"),
        ("pypi.org:0", "'pypi.org:0' has an invalid port (1 to 65535)"),
        ("pypi.org:70000", "'pypi.org:70000' has an invalid port"),
        ("pypi.org:http", "'pypi.org:http' has an invalid port"),
        ("*.com", "'*.com' is too broad"),
        ("*", "'*' is not a valid host name"),
        ("a..b", "'a..b' is not a valid host name"),
        ("-a.example.com", "'-a.example.com' is not a valid host name"),
        ("1.2.3.256", "'1.2.3.256' is not a valid IP address"),
        ("1.2.3", "'1.2.3' is not a valid IP address"),
        ("example.123", "'example.123' is not a valid host name or IP address"),
        ("[::1", "'[::1' is not a valid IP address"),
        ("2001:db8::1:99999", "'2001:db8::1:99999' is not a valid IP address"),
        ("127.0.0.1", "'127.0.0.1' is never reachable"),
        ("169.254.169.254", "'169.254.169.254' is never reachable"),
        ("[::1]:80", "'[::1]:80' is never reachable"),
        ("0.0.0.0", "'0.0.0.0' is never reachable"),
        ("224.0.0.1", "'224.0.0.1' is never reachable"),
        ("::ffff:10.0.0.1", "an IPv4 address in IPv6 form: write 10.0.0.1"),
        ("bücher.example", "'bücher.example' is not a host"),
        ("", "an empty entry"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(BadEntry) as raised:
        parse_entry(text)

    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_ecosystem_stands_for_its_hosts_from_the_one_table() -> None:
    entry = parse_entry("Python")

    python = tuple(Host("name", name) for name in ECOSYSTEMS["python"])
    assert entry == Ecosystem("python", python)
    assert {"python", "node", "go", "rust", "ruby", "github"} <= set(ECOSYSTEMS)
    for name, hosts in ECOSYSTEMS.items():
        assert hosts, name
        for host in hosts:
            assert isinstance(parse_entry(host), Host), host


@pytest.mark.parametrize(
    ("entries", "methods", "method", "host", "port", "refused"),
    [
        (["example.com"], "read", "GET", "example.com", 80, None),
        (["example.com"], "read", "GET", "example.com", 443, None),  # https:// through squid
        (["example.com"], "read", "CONNECT", "example.com", 443, None),
        (["example.com"], "read", "CONNECT", "example.com", 80, "host"),
        (["example.com"], "read", "CONNECT", "example.com", 8443, "host"),
        (["example.com"], "read", "GET", "example.com", 8080, "host"),
        (["example.com"], "read", "GET", "www.example.com", 80, "host"),
        (["example.com"], "read", "HEAD", "example.com", 80, None),
        (["example.com"], "read", "OPTIONS", "example.com", 80, None),
        (["example.com"], "read", "POST", "example.com", 80, "method"),
        (["example.com"], "all", "POST", "example.com", 80, None),
        # HTTPS is not method-filtered: CONNECT is allowed, whatever is sent inside.
        (["*.example.com"], "read", "CONNECT", "www.example.com", 443, None),
        (["example.com:8443"], "read", "CONNECT", "example.com", 8443, None),
        (["example.com:8443"], "read", "CONNECT", "example.com", 443, "host"),
        (["example.com:8080"], "read", "GET", "example.com", 8080, None),
        (["example.com:8080"], "read", "GET", "example.com", 80, "host"),
        (["*.example.com"], "read", "GET", "a.b.example.com", 80, None),
        (["*.example.com"], "read", "GET", "example.com", 80, "host"),
        (["*.example.com"], "read", "GET", "badexample.com", 80, "host"),
        (["203.0.113.5"], "read", "GET", "203.0.113.5", 80, None),
        (["203.0.113.5"], "read", "GET", "203.0.113.6", 80, "host"),
        (["2001:db8::1"], "read", "CONNECT", "[2001:db8::1]", 443, None),
        # Names and addresses never stand for each other.
        (["example.com"], "read", "GET", "93.184.215.14", 80, "host"),
        (["python"], "read", "GET", "files.pythonhosted.org", 443, None),
        ([], "all", "GET", "example.com", 80, "host"),
    ],
)
def test_what_a_policy_refuses(
    entries: list[str], methods: str, method: str, host: str, port: int, refused: str | None
) -> None:
    policy = policy_of(entries, "read" if methods == "read" else "all")

    assert policy.refuses(method, host, port) == refused


def test_off_refuses_everything() -> None:
    assert OFF.refuses("GET", "example.com", 80) == "host"
    assert str(OFF) == "off"


def test_lists_as_neo_network_and_the_cli_write_them() -> None:
    assert parse_list("off") == OFF
    assert parse_list(" OFF ") == OFF
    listed = parse_list("python, example.com:8443,,")
    assert [str(item) for item in listed.items] == ["python", "example.com:8443"]
    assert listed.methods == "all"
    assert all(host.trusted for host in listed.hosts)
    with pytest.raises(BadEntry, match="an empty list"):
        parse_list(" , ")
    with pytest.raises(BadEntry, match="unknown ecosystem 'pyton'"):
        parse_list("pyton,node")


def test_the_default_is_the_detected_ecosystems_read_only() -> None:
    policy = default_policy(["python", "node", "python"])

    assert [str(item) for item in policy.items] == ["node", "python"]
    assert policy.methods == "read"
    assert str(default_policy([])) == "nothing (read)"


def test_without_a_ceiling_the_repository_gets_what_it_asks_but_private_addresses() -> None:
    asked = policy_of(["python", "example.com", "10.0.0.5:8080", "203.0.113.5"], "all")

    bounded = bound(asked, None)

    assert [str(item) for item in bounded.policy.items] == ["python", "example.com", "203.0.113.5"]
    assert bounded.notes == (
        "10.0.0.5:8080: private addresses, reachable only when the operator's NEO_NETWORK"
        " lists them",
    )
    assert not any(host.trusted for host in bounded.policy.hosts)


@pytest.mark.parametrize(
    ("asked", "ceiling", "kept", "notes"),
    [
        ("python,node", "python,node,go", "python, node", ()),
        (
            "python,example.com",
            "python",
            "python",
            ("the operator's NEO_NETWORK does not allow example.com",),
        ),
        (
            "*.example.com",
            "api.example.com,*.cdn.example.com",
            "api.example.com, *.cdn.example.com",
            (
                "the operator's NEO_NETWORK narrows *.example.com to api.example.com,"
                " *.cdn.example.com",
            ),
        ),
        ("api.example.com", "*.example.com", "api.example.com", ()),
        (
            "example.com",
            "example.com:443",
            "example.com:443",
            ("the operator's NEO_NETWORK narrows example.com to example.com:443",),
        ),
        (
            "example.com:8443",
            "example.com",
            "",
            ("the operator's NEO_NETWORK does not allow example.com:8443",),
        ),
        ("example.com:8443", "example.com:8443", "example.com:8443", ()),
        (
            "github",
            "github.com",
            "github.com",
            ("the operator's NEO_NETWORK narrows github to github.com",),
        ),
        # A listed address never admits a name, nor a name an address.
        (
            "203.0.113.5",
            "example.com",
            "",
            ("the operator's NEO_NETWORK does not allow 203.0.113.5",),
        ),
        ("10.0.0.5:8080", "10.0.0.5:8080", "10.0.0.5:8080", ()),
    ],
)
def test_the_operator_ceiling_intersects(
    asked: str, ceiling: str, kept: str, notes: tuple[str, ...]
) -> None:
    repository = policy_of(asked.split(","), "read")

    bounded = bound(repository, parse_list(ceiling))

    assert ", ".join(str(item) for item in bounded.policy.items) == kept
    assert bounded.notes == notes
    # What the operator listed may reach private addresses.
    assert all(host.trusted for host in bounded.policy.hosts)


def test_the_ceiling_bounds_methods_and_off_wins() -> None:
    repository = policy_of(["python"], "all")

    assert bound(repository, parse_list("python", "read")).policy.methods == "read"
    assert bound(repository, parse_list("off")) == bound(OFF, None).__class__(
        OFF, ("the operator's NEO_NETWORK is off: no network",)
    )
    assert bound(OFF, parse_list("python")).policy == OFF


def test_setup_reaches_any_public_host_within_the_ceiling() -> None:
    agent = policy_of(["example.com:8443"], "read")

    unbound = setup_policy(agent, None)
    assert unbound.anywhere
    assert unbound.methods == "all"
    assert unbound.refuses("POST", "anything.example.org", 80) is None
    assert unbound.refuses("CONNECT", "anything.example.org", 443) is None
    assert unbound.refuses("CONNECT", "anything.example.org", 22) == "host"
    assert unbound.refuses("CONNECT", "example.com", 8443) is None

    ceiling = parse_list("python")
    bounded = setup_policy(agent, ceiling)
    assert not bounded.anywhere
    assert bounded.refuses("GET", "pypi.org", 443) is None
    assert bounded.refuses("GET", "example.org", 80) == "host"

    assert setup_policy(OFF, None) == OFF
    assert setup_policy(agent, parse_list("off")) == OFF


def test_a_plan_is_the_bounded_agent_policy_and_its_setup() -> None:
    job = plan(policy_of(["python", "example.com"], "all"), parse_list("python"))

    assert str(job.agent) == "python (all)"
    assert str(job.setup) == "python (all)"
    assert job.notes == ("the operator's NEO_NETWORK does not allow example.com",)
    assert not job.off
    assert plan(OFF, None).off
    assert str(plan(NetworkPolicy(), None).setup) == "any public host (all)"


def test_a_job_without_network_gets_the_detected_ecosystems() -> None:
    detected = job_plan(None, ["node"], None)
    assert str(detected.agent) == "node (read)"
    assert detected.setup.anywhere

    asked = job_plan(policy_of(["github"]), ["node"], None)
    assert str(asked.agent) == "github (read)"

    bounded = job_plan(None, ["node", "python"], parse_list("python"))
    assert str(bounded.agent) == "python (read)"
    assert bounded.notes == ("the operator's NEO_NETWORK does not allow node",)
