"""A container image as an MCP server: MCP over the container's stdin and stdout,
through the engine's API (as the sandbox is driven; the service image has no docker CLI).

The container has no network, no capabilities, and the server's secrets in
its environment, nothing else of the host's. It is removed when the
transport closes; should the runner die first, the attach ends, stdin closes
(`StdinOnce`) and the server exits, and `sweep_mcp` removes what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound, NotFound
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from runner.sandbox.docker import LABEL_JOB, container_name, plain_socket
from runner.sandbox.owners import LABEL_STARTED, is_orphan, owner_labels, process_alive
from runner.sandbox.removal import remove_container
from runner.text import one_line

__all__ = ["LABEL_MCP", "ContainerFailed", "container_transport", "sweep_mcp"]

LABEL_MCP = "neo.mcp"
_STDOUT, _STDERR = 1, 2
_MiB = 1024 * 1024
# Kept of the server's stderr, to say why it stopped.
_STDERR_KEPT = 8 * 1024
# One message's line: more is a server gone wrong, not an answer to keep reading.
_MAX_LINE = 64 * _MiB
_STOP_GRACE = 2.0


class ContainerFailed(RuntimeError):
    """The engine could not create or start the server's container; one line."""


@contextlib.asynccontextmanager
async def container_transport(
    client: DockerClient,
    image: str,
    *,
    job_id: str,
    server: str,
    environment: Mapping[str, str],
    stderr: bytearray,
) -> AsyncIterator[TransportStreams]:
    """The streams of an MCP session with `image`'s server; `stderr` gets the end of
    what it writes there."""
    name = await _create(client, image, job_id=job_id, server=server, environment=environment)
    try:
        api = client.api
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        try:
            attached = await asyncio.to_thread(api.attach_socket, name, params=params)
            own = plain_socket(attached)
            await asyncio.to_thread(api.start, name)
        except DockerException as error:
            raise ContainerFailed(f"cannot start the container: {one_line(error)}") from None
        reader, writer = await asyncio.open_connection(sock=own, limit=_MAX_LINE)
        async with _bridged(reader, writer, stderr) as streams:
            yield streams
    finally:
        # Shielded from anyio's cancellation (how the gateway stops a server) so
        # the container is gone when the transport is; a native cancel still
        # returns at once, the removal going on in its thread.
        with anyio.CancelScope(shield=True):
            await asyncio.shield(asyncio.to_thread(_remove, client, name))


@contextlib.asynccontextmanager
async def _bridged(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stderr: bytearray
) -> AsyncIterator[TransportStreams]:
    """Docker's multiplexed stream as the session's two streams, as stdio_client's pipes."""
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        pending = b""
        async with incoming_writer:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
                while True:
                    kind, length = struct.unpack(">BxxxL", await reader.readexactly(8))
                    payload = await reader.readexactly(length)
                    if kind == _STDERR:
                        stderr.extend(payload)
                        del stderr[:-_STDERR_KEPT]
                        continue
                    if kind != _STDOUT:
                        continue
                    *lines, pending = (pending + payload).split(b"\n")
                    if len(pending) > _MAX_LINE:
                        raise ConnectionError("a message over the line limit")
                    for line in lines:
                        if line.strip():
                            await incoming_writer.send(_parsed(line))

    async def write() -> None:
        async with outgoing_reader:
            async for message in outgoing_reader:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(data.encode() + b"\n")
                await writer.drain()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            # Closing the attach closes the server's stdin: it ends as at EOF.
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
            group.cancel_scope.cancel()


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        return error


async def _create(
    client: DockerClient, image: str, *, job_id: str, server: str, environment: Mapping[str, str]
) -> str:
    api = client.api
    name = container_name(f"{job_id}-mcp-{server}")
    labels = {
        LABEL_MCP: server,
        LABEL_JOB: job_id,
        LABEL_STARTED: str(int(time.time())),
        **owner_labels(),
    }
    config = api.create_host_config(
        network_mode="none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        init=True,
        pids_limit=256,
        mem_limit=1024 * _MiB,
        memswap_limit=1024 * _MiB,
    )
    try:
        await asyncio.to_thread(
            api.create_container,
            image,
            name=name,
            labels=labels,
            environment=dict(environment),
            stdin_open=True,
            host_config=config,
        )
    except ImageNotFound:
        raise ContainerFailed(
            f"image {image} is not on the service's host (Neo never pulls one)"
        ) from None
    except DockerException as error:
        raise ContainerFailed(f"cannot create the container: {one_line(error)}") from None
    return name


def _remove(client: DockerClient, name: str) -> None:
    api = client.api
    with contextlib.suppress(DockerException, OSError):
        with contextlib.suppress(NotFound):
            api.stop(name, timeout=int(_STOP_GRACE))
        remove_container(client, name)


def sweep_mcp(client: DockerClient, *, max_age: float) -> list[str]:
    """Remove MCP server containers left over from a crash (see `is_orphan`); their names."""
    host = socket.gethostname()
    now = time.time()
    removed: list[str] = []
    for summary in client.api.containers(all=True, filters={"label": LABEL_MCP}):
        labels: dict[str, Any] = summary.get("Labels") or {}
        if is_orphan(labels, host=host, now=now, max_age=max_age, alive=process_alive):
            with contextlib.suppress(DockerException):
                if remove_container(client, summary["Id"]):
                    removed.append(str(summary["Names"][0]).lstrip("/"))
    return removed
