"""The sandbox's relay sends what the proxy answers at once (issue 24).

squid writes a response in pieces, its headers and then the body. With Nagle's
algorithm on the relay's socket to the client, a small piece waited for the
client to acknowledge the previous one, which a client waiting for the rest
of the answer delays by 40 ms: one request in ten through the relay took 40 ms
more. So the relay's client sockets have TCP_NODELAY. The relay runs in this
process, so its socket is found among this process's descriptors.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.sandbox import exec_server
from tests.runner.network.stand_in import StandInProxy


class Proxy(StandInProxy):
    """The proxy's socket: notes each connection's PROXY header, keeps it open."""

    def __init__(self, path: Path) -> None:
        self.headed = threading.Event()
        self.connections: list[socket.socket] = []
        super().__init__(path)

    def answer(self, connection: socket.socket) -> None:
        self.connections.append(connection)
        if connection.makefile("rb").readline().startswith(b"PROXY "):
            self.headed.set()

    def close(self) -> None:
        super().close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Proxy]:
    found = Proxy(tmp_path / "proxy.sock")
    yield found
    found.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def relay_end(port: int, client: socket.socket) -> int:
    """TCP_NODELAY of the relay's socket (in this process) connected to `client`."""
    wanted = (("127.0.0.1", port), client.getsockname())
    for name in os.listdir("/proc/self/fd"):
        try:
            found = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue  # not a socket
        with found:
            try:
                ends = (found.getsockname(), found.getpeername())
            except OSError:
                continue
            if found.family == socket.AF_INET and ends == wanted:
                return found.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    raise AssertionError("the relay's end of the connection is not in this process")


def test_the_relay_sends_small_pieces_without_waiting(proxy: Proxy, tmp_path: Path) -> None:
    agent = exec_server.Agent(str(tmp_path), open(os.devnull, "wb"))  # noqa: SIM115
    port = free_port()
    exec_server.Relay(agent, str(proxy.path), port).start()

    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        assert proxy.headed.wait(10), "the relay never reached the proxy"
        assert relay_end(port, client) != 0
