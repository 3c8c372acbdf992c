"""Whether the gateway may reach a URL server: the job's network policy, applied on the host.

The egress proxy applies the policy to the sandbox's requests; a URL server
is reached from the host, so the gateway applies the same rules itself:

- `url_refusal` (pure): the URL's host and port must be allowed by the
  job's policy (HTTPS as a CONNECT, plain HTTP as a POST, which `methods:
  read` refuses), unless the operator vouches for the URL (NEO_MCP_URLS).
- `checked_client`: an HTTP client that looks the name up when it connects
  and connects only to an address it then accepts: never loopback,
  link-local, multicast or reserved ones, nor a private one unless the
  operator listed the host. Checked and connected in one step, so a name
  that resolves elsewhere a moment later (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import httpcore2
import httpx2

from runner.mcp.operator import Operator
from runner.network.hosts import NEVER_RANGES, PRIVATE_RANGES
from runner.network.policy import NetworkPolicy

__all__ = ["Resolve", "Unreachable", "address_refusal", "checked_client", "url_refusal"]

# A name's addresses, as getaddrinfo gives them: (host, port) -> addresses.
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]

_NEVER = tuple(ipaddress.ip_network(net) for net in NEVER_RANGES)
_PRIVATE = tuple(ipaddress.ip_network(net) for net in PRIVATE_RANGES)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Unreachable(httpcore2.ConnectError):
    """A connection the policy refuses; raised where a failed connect would be."""


def url_refusal(url: str, policy: NetworkPolicy, operator: Operator) -> str | None:
    """Why the gateway may not reach `url` under `policy`; None when it may (its
    addresses are then checked as it connects, unless the operator vouches for it)."""
    if operator.vouches_for(url):
        return None
    parts = urllib.parse.urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    why = policy.refuses("CONNECT" if scheme == "https" else "POST", host, port)
    shown = host if parts.port is None else f"{host}:{port}"
    if why == "host":
        return (
            f"the job's network does not allow {shown} (add it to `network.allow`,"
            " or the operator to NEO_MCP_URLS)"
        )
    if why == "method":
        return f"plain HTTP to {shown} needs `network.methods: all`; prefer https"
    return None


def address_refusal(address: str, *, trusted: bool) -> str | None:
    """Why the gateway may not connect to `address`; `trusted`: the operator listed its host."""
    found = ipaddress.ip_address(address)
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        found = found.ipv4_mapped
    if any(found in net for net in _NEVER if net.version == found.version):
        return f"{address} is a loopback, link-local, multicast or reserved address"
    if not trusted and any(found in net for net in _PRIVATE if net.version == found.version):
        return f"{address} is a private address, which only the operator's NEO_NETWORK can open"
    return None


def checked_client(
    policy: NetworkPolicy,
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout,
    resolve: Resolve | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client for one URL server that connects only where `policy` allows
    (see `address_refusal`); no proxy from the environment, no redirect followed."""

    def trusted(host: str, port: int) -> bool:
        return any(
            h.trusted and h.matches(host) and h.admits(port, connect=True) for h in policy.hosts
        ) or any(
            h.trusted and h.matches(host) and h.admits(port, connect=False) for h in policy.hosts
        )

    backend = _CheckedBackend(resolve or _getaddrinfo, trusted)
    return httpx2.AsyncClient(
        transport=_Transport(backend), headers=headers, timeout=timeout, trust_env=False
    )


async def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _CheckedBackend(httpcore2.AsyncNetworkBackend):
    """Connects to a host's first address the policy accepts, looked up here."""

    def __init__(self, resolve: Resolve, trusted: Callable[[str, int], bool]) -> None:
        self._resolve = resolve
        self._trusted = trusted
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        literal = _literal(host)
        try:
            addresses = [literal] if literal is not None else list(await self._resolve(host, port))
        except OSError as error:
            raise httpcore2.ConnectError(
                f"cannot look up {host}: {error.strerror or error}"
            ) from None
        trusted = self._trusted(host.lower(), port)
        allowed = [a for a in addresses if address_refusal(a, trusted=trusted) is None]
        if not allowed:
            why = address_refusal(addresses[0], trusted=trusted) if addresses else "no address"
            raise Unreachable(f"refused {host}: {why}")
        failure: Exception | None = None
        for address in allowed:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise Unreachable("a server is reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Transport(httpx2.AsyncHTTPTransport):
    """httpx2's transport over a connection pool that connects through `backend`.

    httpx2 takes no network backend, so its pool is replaced by one made the
    way it makes it, with the backend; a test connects through it, so an
    httpx2 that stops keeping its pool there fails it.
    """

    def __init__(self, backend: httpcore2.AsyncNetworkBackend) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            network_backend=backend,
        )


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None
