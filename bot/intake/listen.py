"""The socket `neo serve` listens on, bound before anything else starts.

uvicorn binds late and reports a failure as a log record and exit status 3;
bound here, a host that is no address and a port taken are one line naming
`--host` or `--port`, exit 2, before the service has checked its App or
opened its queue.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Iterator

from runner.errors import ConfigError

__all__ = ["listening_socket"]


@contextlib.contextmanager
def listening_socket(host: str, port: int) -> Iterator[socket.socket]:
    """A TCP socket bound to `host`:`port` (not yet listening), closed after.

    Raises ConfigError naming `--host` when it resolves to no address, and
    `--port` (or `--host`, for an address this machine lacks) when it cannot
    be bound.
    """
    try:
        found = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else "not a host name"
        raise ConfigError(f"--host {host!r}: not an address of this machine ({reason})") from None
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        # As uvicorn does: a restart may bind while the last one's connections close.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # `::` takes IPv4 too, as it would in uvicorn.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
            sock.bind(address)
        except OSError as error:
            flag = "--host" if error.errno == errno.EADDRNOTAVAIL else "--port"
            raise ConfigError(
                f"{flag}: cannot listen on {host}:{port}: {error.strerror or error}"
            ) from None
        yield sock
    finally:
        sock.close()
