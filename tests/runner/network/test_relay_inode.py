"""The relay finds the socket of each connection it accepts by one lookup (issue 24).

To name the command behind a connection, the relay needs the inode of the
client's end. /proc/net/tcp lists it, but reading that file walks every TCP
socket of the host, whatever the namespace: 1.2 ms of each new connection
through a sandbox's relay on a host with a few hundred sockets. The kernel's
socket diagnostics (NETLINK_SOCK_DIAG) answer the one socket asked for; the
file stays as the way of a kernel without them. Both must agree, on the host
and inside a real docker sandbox (its seccomp profile, no capabilities, no
network but loopback).
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from docker import DockerClient

from runner.sandbox import exec_server
from runner.sandbox.docker import WORKSPACE, DockerSandbox
from tests.runner.sandbox.conftest import SANDBOX_IMAGE

# In the sandbox: a loopback connection, and what each lookup says of its two
# ends, against the inodes of the descriptors this process holds.
IN_SANDBOX = f"""
import importlib.util, os, socket
spec = importlib.util.spec_from_file_location("es", "{WORKSPACE}/exec_server.py")
es = importlib.util.module_from_spec(spec)
spec.loader.exec_module(es)
listener = socket.create_server(("127.0.0.1", 0))
client = socket.create_connection(listener.getsockname())
server, _ = listener.accept()
near, far = client.getsockname()[1], listener.getsockname()[1]
def held(end):
    return int(os.readlink(f"/proc/self/fd/{{end.fileno()}}")[8:-1])
print(held(client), es.diagnosed_inode(near, far), es.listed_inode(near, far))
print(held(server), es.diagnosed_inode(far, near), es.listed_inode(far, near))
"""


def held(end: socket.socket) -> int:
    """The inode of the socket behind descriptor `end`, as /proc/self/fd names it."""
    return int(os.readlink(f"/proc/self/fd/{end.fileno()}").removeprefix("socket:[")[:-1])


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket, int, int]]:
    """A loopback connection: its client end, server end, and their ports."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    with client, server:
        yield client, server, client.getsockname()[1], server.getsockname()[1]


def test_the_kernel_names_each_end_of_a_connection_as_proc_does(
    connection: tuple[socket.socket, socket.socket, int, int],
) -> None:
    client, server, near, far = connection

    assert exec_server.diagnosed_inode(near, far) == held(client)
    assert exec_server.diagnosed_inode(far, near) == held(server)
    assert exec_server.listed_inode(near, far) == held(client)
    assert exec_server.socket_inode(near, far) == held(client)


def test_a_connection_nobody_holds_is_none_either_way(
    connection: tuple[socket.socket, socket.socket, int, int],
) -> None:
    _, _, near, far = connection
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()

    assert exec_server.diagnosed_inode(port, far) is None
    assert exec_server.listed_inode(port, far) is None
    assert exec_server.socket_inode(near, port) is None


def test_without_the_kernels_diagnostics_the_table_answers(
    connection: tuple[socket.socket, socket.socket, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _, near, far = connection

    def refused(local_port: int, remote_port: int) -> int | None:
        raise OSError(errno.EPROTONOSUPPORT, "Protocol not supported")

    monkeypatch.setattr(exec_server, "diagnosed_inode", refused)

    assert exec_server.socket_inode(near, far) == held(client)


@pytest_asyncio.fixture
async def sandbox(docker_client: DockerClient, tmp_path: Path) -> AsyncIterator[DockerSandbox]:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(exec_server.__file__, tree / "exec_server.py")
    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-relay-inode", client=docker_client
    ) as started:
        yield started


async def test_the_kernel_answers_inside_a_docker_sandbox(sandbox: DockerSandbox) -> None:
    result = await sandbox.run(["python3", "-c", IN_SANDBOX], timeout=60)
    output = result.output.decode()
    assert result.exit_code == 0, output

    rows = [line.split() for line in output.splitlines()]
    assert len(rows) == 2, output
    for inode, diagnosed, listed in rows:
        assert inode != "0"
        assert diagnosed == inode == listed, output
