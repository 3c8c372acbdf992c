"""The sandbox's relay names the command that opened each connection, even when the
command connects before the exec server has recorded it (issue 24).

The exec server records a command's process group just after the process
starts; on a loaded host the thread that started it may wait its turn while
the command already runs and connects. Here that thread is held until the
connection has been named (or a bound passed), as such a host would hold it:
the relay must wait for the record, not report "a process no command owns".
The agent and its relay run in this process, on the host; the proxy is a
unix socket of the test's, answering 403 as squid does to a refused host.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.sandbox import exec_server
from tests.runner.network.stand_in import StandInProxy

# How long the starting thread is held at most, waiting for the connection's
# header: well under the relay's own wait for a record (exec_server.OWNER_WAIT).
_HELD = 3.0
REFUSED = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
# A command that makes one request through the relay and exits once answered.
REQUEST = (
    "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 10);"
    " s.sendall(b'GET http://other.test/ HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n');"
    " print(s.recv(64).split(b'\\r\\n')[0].decode())"
)


class Proxy(StandInProxy):
    """The proxy's socket: records the PROXY header each connection states, refuses it."""

    def __init__(self, path: Path) -> None:
        self.headers: list[str] = []
        self.headed = threading.Event()
        super().__init__(path)

    def answer(self, connection: socket.socket) -> None:
        with connection:
            stream = connection.makefile("rb")
            header = stream.readline().decode().strip()
            # The whole request is read before the answer: a close with
            # unread bytes would reset the connection, answer and all.
            while stream.readline() not in (b"\r\n", b""):
                pass
            self.headers.append(header)
            self.headed.set()
            connection.sendall(REFUSED)
            connection.shutdown(socket.SHUT_WR)
            while stream.read(4096):
                pass


class HeldAgent(exec_server.Agent):
    """The exec server's agent, its starting thread held as a loaded host may hold it:
    the command runs, and connects, while the thread has not recorded it."""

    def __init__(self, root: Path, proxy: Proxy) -> None:
        super().__init__(str(root), open(os.devnull, "wb"))  # noqa: SIM115
        self.proxy = proxy

    def popen(self, argv: list[str], cwd: str, request: dict[str, Any]) -> subprocess.Popen[bytes]:
        process = super().popen(argv, cwd, request)
        self.proxy.headed.wait(_HELD)
        return process


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Proxy]:
    found = Proxy(tmp_path / "proxy.sock")
    yield found
    found.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_command_that_connects_before_it_is_recorded_is_named(
    proxy: Proxy, tmp_path: Path
) -> None:
    agent = HeldAgent(tmp_path, proxy)
    port = free_port()
    exec_server.Relay(agent, str(proxy.path), port).start()
    argv = [sys.executable, "-c", REQUEST, str(port)]

    result = agent.run(41, {"argv": argv, "timeout": 30})

    assert result["exit_code"] == 0, result
    assert result["output"].strip() == b"HTTP/1.1 403 Forbidden"
    assert [header.split()[:3] for header in proxy.headers] == [
        ["PROXY", "TCP4", exec_server.command_address(41)]
    ]
