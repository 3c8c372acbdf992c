"""The proxy's access log, parsed: which requests it refused, and which command made each.

squid writes one line per request (`runner.network.squid.LOG_FIELDS`). The
client address in it is not a real one: the sandbox's relay states, in a
PROXY protocol header, an address in 10.0.0.0/8 that encodes the id of the
command that opened the connection (`command_address`), so a refusal is
traced back to a command without reading anything a command could forge
beyond its own attribution. Lines are parsed, never shown raw.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from runner.network.hosts import PLAIN_PORT, TLS_PORT
from runner.network.policy import NetworkPolicy
from runner.network.squid import LOG_FIELDS

__all__ = [
    "UNKNOWN_COMMAND",
    "Access",
    "Blocked",
    "EgressReport",
    "blocked_requests",
    "command_address",
    "command_of_address",
    "parse_line",
]

Phase = Literal["setup", "agent"]
Reason = Literal["host", "method", "address"]

# The relay's addresses: 10.0.0.0 for a connection no command could be
# found for, 10.0.0.0 + id + 1 for the command with request id `id`.
_BASE = int(ipaddress.IPv4Address("10.0.0.0"))
_SPAN = 1 << 24
UNKNOWN_COMMAND = "a process no command owns any more"


@dataclass(frozen=True, slots=True)
class Access:
    """One request the proxy logged."""

    time: float
    # The request id of the command that made it; None: not known.
    command: int | None
    method: str
    host: str
    port: int
    denied: bool
    phase: Phase


@dataclass(frozen=True, slots=True)
class Blocked:
    """A host the proxy refused, once, with the first command that tried it.

    `host` carries its port unless it is the usual one (443 for CONNECT, 80
    or 443 for plain HTTP). `reason`: `host`, not
    allowed (or not on that port); `method`, a plain HTTP method `read` does
    not allow; `address`, the name resolved to an address no name may reach.
    """

    host: str
    command: str
    reason: Reason
    phase: Phase
    attempts: int = 1


class EgressReport:
    """What a job's proxy refused, filled in once its sandbox is gone."""

    def __init__(self) -> None:
        self.blocked: tuple[Blocked, ...] = ()


def command_address(ident: int | None) -> str:
    """The client address the relay states for request id `ident`."""
    value = ident + 1 if ident is not None and 0 <= ident < _SPAN - 1 else 0
    return str(ipaddress.IPv4Address(_BASE + value))


def command_of_address(text: str) -> int | None:
    """The request id a relay address stands for; None for an unknown command."""
    try:
        value = int(ipaddress.IPv4Address(text)) - _BASE
    except ValueError:
        return None
    return value - 1 if 0 < value < _SPAN else None


def parse_line(line: str) -> Access | None:
    """The access `line` logs, or None for a line that is not one (squid's own probes)."""
    fields = line.split()
    if len(fields) != len(LOG_FIELDS):
        return None
    time, client, method, host, port, status, _, phase = fields
    if phase not in ("setup", "agent") or host == "-" or not port.isdigit():
        return None
    try:
        ipaddress.IPv4Address(client)
        when = float(time)
    except ValueError:
        return None
    if ipaddress.IPv4Address(client) not in ipaddress.IPv4Network("10.0.0.0/8"):
        return None
    return Access(
        time=when,
        command=command_of_address(client),
        method=method.upper(),
        host=host.lower(),
        port=int(port),
        denied=_denied(status),
        phase="setup" if phase == "setup" else "agent",
    )


def _denied(status: str) -> bool:
    """Whether squid's status tag is a refusal: TCP_DENIED, with or without
    what squid adds when the client left before it was done (`_ABORTED`, a
    refusal all the same: under load a client can read the answer and close
    before squid has finished the request) or its timeout ran out."""
    return status == "TCP_DENIED" or status.startswith("TCP_DENIED_")


def blocked_requests(
    accesses: Iterable[Access],
    *,
    agent: NetworkPolicy,
    setup: NetworkPolicy,
    command: Callable[[int], str | None],
) -> tuple[Blocked, ...]:
    """Each refused host once, in the order first refused, with its first command.

    `command` gives the text of a request id's command; the reason is what
    the phase's policy says of the request, else its address.
    """
    found: dict[str, Blocked] = {}
    for access in accesses:
        if not access.denied:
            continue
        host = access.host
        usual = (TLS_PORT,) if access.method == "CONNECT" else (PLAIN_PORT, TLS_PORT)
        if access.port not in usual:
            host = f"{host}:{access.port}"
        seen = found.get(host)
        if seen is not None:
            found[host] = Blocked(
                seen.host, seen.command, seen.reason, seen.phase, seen.attempts + 1
            )
            continue
        policy = setup if access.phase == "setup" else agent
        reason: Reason = policy.refuses(access.method, access.host, access.port) or "address"
        text = command(access.command) if access.command is not None else None
        found[host] = Blocked(host, text or UNKNOWN_COMMAND, reason, access.phase)
    return tuple(found.values())
