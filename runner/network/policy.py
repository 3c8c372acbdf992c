"""What a sandbox may reach through Neo's egress proxy: the policy, pure.

A policy is `off` (no proxy, no network) or a list of what the agent's
commands may reach, each an ecosystem (`python`: the hosts of
`ECOSYSTEMS["python"]`) or a host (`runner.network.hosts`), and the methods
plain HTTP may use (`read`: GET, HEAD, OPTIONS; `all`).

An address listed never admits a name that resolves to it, nor a name an
address, and a name never reaches an address in a private range unless the
operator listed it (`trusted`). docs/network.md is the user's side of this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from runner.network.ecosystems import ECOSYSTEMS
from runner.network.hosts import (
    PLAIN_PORT,
    TLS_PORT,
    BadEntry,
    Host,
    default_ports,
    is_private,
    parse_host,
    under,
)

__all__ = [
    "METHODS",
    "OFF",
    "READ_METHODS",
    "Bounded",
    "Ecosystem",
    "Methods",
    "NetworkPolicy",
    "Plan",
    "bound",
    "default_policy",
    "job_plan",
    "parse_entry",
    "parse_list",
    "plan",
    "policy_of",
    "setup_policy",
]

Methods = Literal["read", "all"]
METHODS: tuple[Methods, ...] = ("read", "all")
READ_METHODS = ("GET", "HEAD", "OPTIONS")
_WORD = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Ecosystem:
    """An ecosystem named in a list, standing for its hosts."""

    name: str
    hosts: tuple[Host, ...]

    def __str__(self) -> str:
        return self.name


Item = Ecosystem | Host


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """What a sandbox's commands may reach through the proxy.

    `off`: nothing, and no proxy runs. `anywhere`: any host that is not in a
    private range, on 80 and 443, besides `items` (a setup phase without an
    operator's bound). `methods` limits plain HTTP; HTTPS through CONNECT
    carries whatever the client sends, which no proxy sees without breaking
    TLS.
    """

    items: tuple[Item, ...] = ()
    methods: Methods = "read"
    off: bool = False
    anywhere: bool = False

    @property
    def hosts(self) -> tuple[Host, ...]:
        found: list[Host] = []
        for item in self.items:
            found.extend(item.hosts if isinstance(item, Ecosystem) else (item,))
        return tuple(dict.fromkeys(found))

    def refuses(self, method: str, host: str, port: int) -> Literal["host", "method"] | None:
        """Why this policy refuses a request, or None when it lets it through.

        The address a name resolves to is not known here: a request this
        lets through may still be refused for its address (see `PRIVATE_RANGES`).
        """
        if self.off:
            return "host"
        connect = method == "CONNECT"
        host = host.lower()
        listed = any(h.matches(host) and h.admits(port, connect=connect) for h in self.hosts)
        anywhere = self.anywhere and default_ports(port, connect=connect)
        if not (listed or anywhere):
            return "host"
        if not connect and self.methods == "read" and method not in READ_METHODS:
            return "method"
        return None

    def __str__(self) -> str:
        if self.off:
            return "off"
        shown = ", ".join(str(item) for item in self.items) or "nothing"
        if self.anywhere:
            shown = f"any public host, {shown}" if self.items else "any public host"
        return f"{shown} ({self.methods})"


OFF = NetworkPolicy(off=True)


@dataclass(frozen=True, slots=True)
class Bounded:
    """A policy within the operator's bound, and what the bound took away, in words."""

    policy: NetworkPolicy
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """One job's network: the agent's policy, setup's, and what the bound took away."""

    agent: NetworkPolicy
    setup: NetworkPolicy
    notes: tuple[str, ...] = ()

    @property
    def off(self) -> bool:
        """No proxy runs: neither phase reaches anything."""
        return self.agent.off and self.setup.off


def parse_entry(text: str, *, trusted: bool = False) -> Item:
    """An ecosystem's name or a host, as `network.allow` or NEO_NETWORK lists it.

    Raises BadEntry, whose one-line message names the entry.
    """
    word = text.strip().lower()
    if word in ECOSYSTEMS:
        return Ecosystem(
            word, tuple(parse_host(host, trusted=trusted) for host in ECOSYSTEMS[word])
        )
    if _WORD.fullmatch(word):
        known = ", ".join(ECOSYSTEMS)
        raise BadEntry(
            f"unknown ecosystem {text.strip()!r} (one of: {known}; a host needs its domain,"
            " e.g. example.com)"
        )
    return parse_host(text, trusted=trusted)


def policy_of(
    entries: Iterable[str], methods: Methods = "read", *, trusted: bool = False
) -> NetworkPolicy:
    """The policy allowing `entries` (see `parse_entry`) with `methods`."""
    items = tuple(dict.fromkeys(parse_entry(entry, trusted=trusted) for entry in entries))
    return NetworkPolicy(items=items, methods=methods)


def parse_list(text: str, methods: Methods = "all", *, trusted: bool = True) -> NetworkPolicy:
    """`off`, or a comma-separated list of entries: NEO_NETWORK's and `--network`'s form."""
    if text.strip().lower() == "off":
        return OFF
    entries = [entry for entry in text.split(",") if entry.strip()]
    if not entries:
        raise BadEntry("an empty list (write `off` for no network)")
    return policy_of(entries, methods, trusted=trusted)


def default_policy(ecosystems: Iterable[str]) -> NetworkPolicy:
    """The policy of a repository that sets no `network`: the ecosystems its setup
    was detected from (names of `ECOSYSTEMS`), read only."""
    return policy_of(sorted(set(ecosystems)), "read")


def bound(policy: NetworkPolicy, ceiling: NetworkPolicy | None) -> Bounded:
    """`policy` within `ceiling` (the operator's NEO_NETWORK; None: no bound).

    What both allow, hosts narrowed to the ceiling's where it is narrower
    (and trusted, since the operator listed them); methods the lesser. The
    notes say what the repository asked for and does not get. Without a
    ceiling, hosts of private addresses the repository listed are dropped,
    with a note: only the operator can open those.
    """
    if policy.off:
        return Bounded(OFF)
    if ceiling is None:
        kept = tuple(item for item in policy.items if not _private_address(item))
        private = [str(item) for item in policy.items if _private_address(item)]
        notes: tuple[str, ...] = ()
        if private:
            notes = (
                f"{_join(private)}: private addresses, reachable only when the operator's"
                " NEO_NETWORK lists them",
            )
        return Bounded(replace(policy, items=kept), notes)
    if ceiling.off:
        return Bounded(OFF, ("the operator's NEO_NETWORK is off: no network",))
    items: list[Item] = []
    dropped: list[str] = []
    narrowed: list[str] = []
    for item in policy.items:
        wanted = item.hosts if isinstance(item, Ecosystem) else (item,)
        met = [meet for host in wanted for meet in _meets(host, ceiling.hosts)]
        whole = all(any(m == host for m in met) for host in wanted)
        if not met:
            dropped.append(str(item))
        elif isinstance(item, Ecosystem) and whole:
            items.append(Ecosystem(item.name, tuple(met)))
        else:
            items.extend(met)
            if not whole or len(met) > len(wanted):
                narrowed.append(f"{item} to {_join(str(m) for m in met)}")
    methods: Methods = "read" if "read" in (policy.methods, ceiling.methods) else "all"
    found: list[str] = []
    if dropped:
        found.append(f"the operator's NEO_NETWORK does not allow {_join(dropped)}")
    if narrowed:
        found.append(f"the operator's NEO_NETWORK narrows {'; '.join(narrowed)}")
    if methods != policy.methods:
        found.append("the operator's NEO_NETWORK allows only read methods (GET, HEAD, OPTIONS)")
    policy = NetworkPolicy(items=tuple(dict.fromkeys(items)), methods=methods)
    return Bounded(policy, tuple(found))


def job_plan(
    asked: NetworkPolicy | None, ecosystems: Iterable[str], ceiling: NetworkPolicy | None
) -> Plan:
    """A job's network: what its repository asked for (None: `default_policy` of the
    ecosystems automatic setup detected), within the operator's ceiling."""
    return plan(asked if asked is not None else default_policy(ecosystems), ceiling)


def may_reach(asked: NetworkPolicy | None, ceiling: NetworkPolicy | None) -> bool:
    """Whether a job's network (`job_plan`) is on, known before what setup
    detects: only `off`, asked or the ceiling's, turns it off."""
    return not job_plan(asked, (), ceiling).off


def plan(asked: NetworkPolicy, ceiling: NetworkPolicy | None) -> Plan:
    """The network of a job whose repository asks for `asked`, within `ceiling`."""
    bounded = bound(asked, ceiling)
    return Plan(bounded.policy, setup_policy(bounded.policy, ceiling), bounded.notes)


def setup_policy(agent: NetworkPolicy, ceiling: NetworkPolicy | None) -> NetworkPolicy:
    """What setup may reach, given the agent's (bounded) policy.

    Setup is the repository's own step and runs before the model reads
    anything an outsider wrote, so it may reach any public host with any
    method; the operator's ceiling bounds it, and `off` is off for it too.
    """
    if agent.off:
        return OFF
    if ceiling is None:
        return NetworkPolicy(items=agent.items, methods="all", anywhere=True)
    if ceiling.off:
        return OFF
    return NetworkPolicy(items=ceiling.items, methods="all")


def _meets(host: Host, ceiling: Sequence[Host]) -> list[Host]:
    found = [meet for other in ceiling if (meet := _meet(host, other)) is not None]
    return list(dict.fromkeys(found))


def _meet(wanted: Host, bound: Host) -> Host | None:
    """What both `wanted` and `bound` allow, as one host (trusted as `bound` is)."""
    if wanted.port == bound.port:
        port = wanted.port
    elif wanted.port is None or bound.port is None:
        # One is 80 and 443, the other one port: that port, if it is one of them.
        port = wanted.port if bound.port is None else bound.port
        if port not in (PLAIN_PORT, TLS_PORT):
            return None
    else:
        return None
    kind, value = wanted.kind, None
    if wanted.kind == bound.kind and wanted.value == bound.value:
        value = wanted.value
    elif wanted.kind == "name" and bound.kind == "wildcard":
        value = wanted.value if under(wanted.value, bound.value) else None
    elif wanted.kind == "wildcard" and bound.kind == "name":
        kind, value = "name", bound.value if under(bound.value, wanted.value) else None
    elif wanted.kind == bound.kind == "wildcard":
        if under(wanted.value, bound.value):
            value = wanted.value
        elif under(bound.value, wanted.value):
            value = bound.value
    if value is None:
        return None
    return Host(kind, value, port, trusted=bound.trusted)


def _private_address(item: Item) -> bool:
    return isinstance(item, Host) and not item.trusted and is_private(item)


def _join(names: Iterable[str]) -> str:
    return ", ".join(names)
