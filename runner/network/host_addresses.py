"""The Docker host's own addresses, which an egress proxy refuses whatever a name resolves to.

A container reaches the host at every one of the host's addresses, not only
its gateway: its bridges' (one per Docker network) and its other interfaces'
(the one it reaches the world from among them), where services bound to all
addresses listen. Those in a private range are refused already
(`runner.network.hosts.PRIVATE_RANGES`); these are the others. They come
from two places:

- the gateways of the engine's networks, read with each proxy (networks
  come and go): `gateways`;
- the addresses of the host's interfaces, which only its network namespace
  shows: a container of the proxy's image on the host's network reads them
  (`/proc/net/fib_trie`, `/proc/net/if_inet6`), once per process and engine,
  again once `PROBE_TTL` has passed: `HostProbe`.

The runner may itself be in a container (the service image), so its own
addresses are not the host's: the probe asks the engine's host.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from docker import DockerClient
from docker.errors import DockerException
from docker.types import LogConfig

from runner.network.hosts import NEVER_RANGES, PRIVATE_RANGES
from runner.sandbox.docker import plain_socket

__all__ = ["PROBE_TTL", "HostProbe", "gateways", "interface_addresses", "outside_ranges"]

log = logging.getLogger("neo.network")

# How long the host's interface addresses are taken as they were read: they
# change rarely (a DHCP lease, an interface added), and Docker's bridges,
# which come and go, are read with each proxy instead.
PROBE_TTL = 600.0
_PROBE_TIMEOUT = 30.0
_FILES = ("/proc/net/fib_trie", "/proc/net/if_inet6")
_RANGES = tuple(ipaddress.ip_network(net) for net in (*NEVER_RANGES, *PRIVATE_RANGES))
# fib_trie: "|-- 192.0.2.2" then, under it, "/32 host LOCAL" for an address of the host's own.
_LEAF = re.compile(r"\|--\s+(\d+\.\d+\.\d+\.\d+)")
_STDOUT = 1


def outside_ranges(addresses: Iterable[str]) -> list[str]:
    """`addresses` bar those a range refuses already (`NEVER_RANGES`,
    `PRIVATE_RANGES`, with the same exception for the operator's hosts), sorted."""
    kept: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for text in addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if not any(address in net for net in _RANGES if net.version == address.version):
            kept.add(address)
    return [str(a) for a in sorted(kept, key=lambda a: (a.version, int(a)))]


def gateways(networks: Iterable[Mapping[str, Any]]) -> set[str]:
    """The host's addresses on the engine's networks (`GET /networks`): each
    subnet's gateway, which Docker leaves out when it chose the subnet's first
    address itself (a bridge's, the host's)."""
    found: set[str] = set()
    for network in networks:
        bridge = network.get("Driver") == "bridge"
        for config in (network.get("IPAM") or {}).get("Config") or ():
            gateway = (config or {}).get("Gateway")
            if gateway:
                found.add(str(gateway).split("/")[0])
                continue
            with contextlib.suppress(ValueError, KeyError, TypeError, StopIteration):
                if bridge:
                    subnet = ipaddress.ip_network(config["Subnet"], strict=False)
                    found.add(str(next(iter(subnet.hosts()))))
    return found


def interface_addresses(fib_trie: str, if_inet6: str) -> set[str]:
    """The host's own addresses, from its /proc/net/fib_trie (IPv4: the
    table's LOCAL /32 leaves) and /proc/net/if_inet6 (IPv6)."""
    found: set[str] = set()
    leaf = None
    for line in fib_trie.splitlines():
        match = _LEAF.search(line)
        if match is not None:
            leaf = match.group(1)
        elif leaf is not None and "/32 host LOCAL" in line:
            found.add(leaf)
    for line in if_inet6.splitlines():
        digits = line.split()[0] if line.split() else ""
        if len(digits) == 32:
            with contextlib.suppress(ValueError):
                found.add(str(ipaddress.IPv6Address(int(digits, 16))))
    return found


@dataclass
class _Known:
    addresses: frozenset[str]
    read_at: float


@dataclass
class HostProbe:
    """The host's interface addresses per engine, read by a container on the
    host's network; shared by a process's jobs."""

    ttl: float = PROBE_TTL
    _known: dict[str, _Known] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def addresses(
        self, client: DockerClient, image: str, labels: Mapping[str, str]
    ) -> frozenset[str]:
        """The addresses, read again when older than `ttl` by a container of
        `image` labelled `labels` (a crash's leftover is swept as the proxy's
        are). A probe that fails is logged and leaves the last ones read (none
        at first): the private ranges and the bridges' gateways are refused
        all the same."""
        key = str(client.api.base_url)
        with self._lock:
            known = self._known.get(key)
        if known is not None and time.monotonic() - known.read_at < self.ttl:
            return known.addresses
        try:
            found = frozenset(await asyncio.to_thread(_probe, client, image, labels))
        except (DockerException, OSError, ValueError) as error:
            log.warning("reading the docker host's addresses failed: %s", error)
            found = known.addresses if known is not None else frozenset()
        with self._lock:
            self._known[key] = _Known(found, time.monotonic())
        return found


def _probe(client: DockerClient, image: str, labels: Mapping[str, str]) -> set[str]:
    """Run `image` on the host's network to read its address tables (blocking)."""
    api = client.api
    container = api.create_container(
        image,
        entrypoint=["sh", "-c", 'for f in "$@"; do cat "$f"; echo "@@"; done', "probe", *_FILES],
        labels=dict(labels),
        host_config=api.create_host_config(
            network_mode="host",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=16,
            log_config=LogConfig(type="none"),
        ),
    )["Id"]
    try:
        own = plain_socket(api.attach_socket(container, params={"stdout": 1, "stream": 1}))
        with own:
            own.settimeout(_PROBE_TIMEOUT)
            api.start(container)
            output = _stdout(own)
    finally:
        with contextlib.suppress(DockerException):
            api.remove_container(container, force=True)
    parts = output.decode("ascii", "replace").split("@@")
    if len(parts) < len(_FILES):
        raise ValueError("the probe printed less than it reads")
    return interface_addresses(parts[0], parts[1])


def _stdout(sock: socket.socket) -> bytes:
    """Docker's multiplexed stream until it ends: what was written to stdout."""
    data = bytearray()
    while chunk := sock.recv(65536):
        data += chunk
    out = bytearray()
    at = 0
    while at + 8 <= len(data):
        kind, length = struct.unpack(">BxxxL", data[at : at + 8])
        if kind == _STDOUT:
            out += data[at + 8 : at + 8 + length]
        at += 8 + length
    return bytes(out)
