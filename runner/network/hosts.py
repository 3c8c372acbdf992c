"""One destination a sandbox may reach: a host entry of a network list, parsed.

`example.com`, `*.example.com` (the names under it, not itself),
`example.com:8443`, `203.0.113.5`, `2001:db8::1`, `[2001:db8::1]:8080`. A
host without a port is reached on 80 (plain HTTP) and 443 (HTTPS, through
CONNECT); with one, on that port alone. Names are matched as written, never
through DNS. Loopback, link-local (the cloud metadata service among them),
multicast and reserved addresses are never reachable, so never listed.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "NEVER_RANGES",
    "PLAIN_PORT",
    "PRIVATE_RANGES",
    "TLS_PORT",
    "BadEntry",
    "Host",
    "default_ports",
    "is_private",
    "parse_host",
    "under",
]

Kind = Literal["name", "wildcard", "address"]
# What a host without a port is reached on: 80 in the clear, 443 through CONNECT.
PLAIN_PORT, TLS_PORT = 80, 443

# Ranges a name's DNS answer never takes a request to unless the operator
# listed the name: RFC 1918, shared address space (RFC 6598), unique local
# IPv6. Docker's networks, the host's bridges and most internal services live here.
PRIVATE_RANGES = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "fc00::/7",
)
# Ranges nothing reaches: "this network", loopback, link-local (169.254.169.254
# is the cloud metadata service), multicast, reserved and broadcast.
NEVER_RANGES = (
    "0.0.0.0/8",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/128",
    "::1/128",
    "fe80::/10",
    "ff00::/8",
)
_PRIVATE = tuple(ipaddress.ip_network(net) for net in PRIVATE_RANGES)
_NEVER = tuple(ipaddress.ip_network(net) for net in NEVER_RANGES)

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_NAME = 253


class BadEntry(ValueError):
    """An entry of a network list that is not an ecosystem or a host; the message names it."""


@dataclass(frozen=True, slots=True, order=True)
class Host:
    """One destination: a name, the names under a domain, or an address; on `port`.

    `value` is the name, the domain a wildcard covers (without `*.`), or the
    address in its canonical form. `port` None: 80 and 443. `trusted`: listed
    by the operator, so it may reach an address in a private range.
    """

    kind: Kind
    value: str
    port: int | None = None
    trusted: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        host = f"*.{self.value}" if self.kind == "wildcard" else self.value
        if self.kind == "address" and ":" in host:
            host = f"[{host}]" if self.port is not None else host
        return host if self.port is None else f"{host}:{self.port}"

    def matches(self, host: str) -> bool:
        """Whether a request's host (lower case, as the URL has it) is this one's."""
        if self.kind == "name":
            return host == self.value
        if self.kind == "wildcard":
            return under(host, self.value)
        address = _address(host)
        return address is not None and str(address) == self.value

    def admits(self, port: int, *, connect: bool) -> bool:
        """Whether a request to `port` (CONNECT or not) is within this host's ports."""
        if self.port is not None:
            return port == self.port
        return default_ports(port, connect=connect)


def parse_host(text: str, *, trusted: bool = False) -> Host:
    """A host entry; raises BadEntry, whose one-line message names it."""
    return _host(text, trusted)


def is_private(host: Host) -> bool:
    """Whether `host` is an address in a private range."""
    if host.kind != "address":
        return False
    address = ipaddress.ip_address(host.value)
    return any(address in net for net in _PRIVATE if net.version == address.version)


def under(name: str, domain: str) -> bool:
    return name.endswith("." + domain)


def default_ports(port: int, *, connect: bool) -> bool:
    """Whether `port` is one a host without a port is reached on."""
    return port == TLS_PORT if connect else port in (PLAIN_PORT, TLS_PORT)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def _host(text: str, trusted: bool) -> Host:
    """A host entry: `name`, `*.name`, `name:port`, an address, `[v6]:port`."""
    raw = text.strip()
    shown = repr(raw)
    if not raw:
        raise BadEntry("an empty entry")
    if "://" in raw:
        raise BadEntry(f"{shown} is a URL: write its host alone, e.g. example.com")
    if any(c in raw for c in "/?#@ \t") or not raw.isascii() or not raw.isprintable():
        raise BadEntry(f"{shown} is not a host (a name, *.name, name:port or an IP address)")
    lowered = raw.lower()
    host, port = _split_port(lowered, shown)
    address = _address(host) if host.startswith("[") or ":" in host else None
    if address is None and re.fullmatch(r"[0-9.]+", host):
        address = _address(host)
        if address is None:
            raise BadEntry(f"{shown} is not a valid IP address")
    if address is not None:
        return Host("address", _checked_address(address, shown), port, trusted)
    if host.startswith("[") or ":" in host:
        raise BadEntry(f"{shown} is not a valid IP address")
    if host.startswith("*."):
        domain = _checked_name(host[2:], shown)
        if "." not in domain:
            raise BadEntry(f"{shown} is too broad: a wildcard needs a domain, e.g. *.example.com")
        return Host("wildcard", domain, port, trusted)
    name = _checked_name(host, shown)
    if "." not in name:
        raise BadEntry(f"{shown} is not a host: a host needs its domain, e.g. example.com")
    return Host("name", name, port, trusted)


def _split_port(text: str, shown: str) -> tuple[str, int | None]:
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise BadEntry(f"{shown} is not a valid IP address")
        host, rest = text[: close + 1], text[close + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise BadEntry(f"{shown} is not a host (a name, *.name, name:port or an IP address)")
        return host, _port(rest[1:], shown)
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, _port(port, shown)
    return text, None


def _port(text: str, shown: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise BadEntry(f"{shown} has an invalid port (1 to 65535)")
    return int(text)


def _checked_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address, shown: str) -> str:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise BadEntry(f"{shown} is an IPv4 address in IPv6 form: write {address.ipv4_mapped}")
    if any(address in net for net in _NEVER if net.version == address.version):
        raise BadEntry(
            f"{shown} is never reachable (loopback, link-local, multicast or reserved address)"
        )
    return str(address)


def _checked_name(name: str, shown: str) -> str:
    name = name.removesuffix(".")
    labels = name.split(".")
    if len(name) > _MAX_NAME or not all(_LABEL.fullmatch(label) for label in labels):
        raise BadEntry(f"{shown} is not a valid host name")
    if labels[-1].isdigit():
        raise BadEntry(f"{shown} is not a valid host name or IP address")
    return name
