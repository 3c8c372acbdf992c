"""One server's MCP session, through the transport its configuration names.

A command runs under the operator's allowance, with no environment but a
few neutral variables and its secrets, in an empty directory; an image runs
in a container without network (`runner.mcp.container`); a URL is reached
only as `runner.mcp.reach` allows. The SDK's `Client` speaks the protocol
over each: the 2026 sessionless revision, or the handshake before it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import IO, Any, TextIO, cast

import httpx2
from docker import DockerClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp_types import Implementation

from runner.mcp.container import container_transport
from runner.mcp.operator import NotAllowed, Operator, secret_variable
from runner.mcp.reach import Resolve, checked_client, url_refusal
from runner.mcp.servers import Command, ContainerImage, Remote, ServerSpec
from runner.network.policy import NetworkPolicy

__all__ = ["Refused", "Where", "open_builtin", "open_server", "secrets_of"]

_SECRET_REFERENCE = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")


class Refused(Exception):
    """The server may not be reached or run; the message says why, in one line."""


class Where:
    """What every server of a run shares: the operator, the network, the job, the engine."""

    def __init__(
        self,
        operator: Operator,
        policy: NetworkPolicy,
        *,
        job_id: str,
        docker: Callable[[], DockerClient] | None = None,
        resolve: Resolve | None = None,
    ) -> None:
        self.operator = operator
        self.policy = policy
        self.job_id = job_id
        self._docker = docker
        self._client: DockerClient | None = None
        self.resolve = resolve

    def docker(self) -> DockerClient:
        if self._client is None:
            if self._docker is None:
                from runner.sandbox.docker import docker_client

                self._docker = docker_client
            self._client = self._docker()
        return self._client


def secrets_of(spec: ServerSpec, operator: Operator) -> dict[str, str]:
    """The values of `spec`'s secrets; Refused names one the operator does not hold."""
    found: dict[str, str] = {}
    for name in spec.secrets:
        value = operator.secret(name)
        if value is None:
            raise Refused(f"the operator holds no secret {name} ({secret_variable(name)})")
        found[name] = value
    return found


@contextlib.asynccontextmanager
async def open_server(spec: ServerSpec, where: Where, stderr: bytearray) -> AsyncIterator[Client]:
    """A connected client of `spec`'s server; `stderr` gets the end of what it says there.

    Raises Refused before anything runs or connects when it may not.
    """
    secrets = secrets_of(spec, where.operator)
    source = spec.source
    async with contextlib.AsyncExitStack() as stack:
        transport: contextlib.AbstractAsyncContextManager[Any]
        if isinstance(source, Command):
            try:
                argv = where.operator.command(source.argv)
            except NotAllowed as error:
                raise Refused(str(error)) from None
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="neo-mcp-")))
            log = stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
            stack.callback(_tail_into, log, stderr)
            params = StdioServerParameters(
                command=argv[0], args=list(argv[1:]), env=secrets, cwd=home
            )
            transport = stdio_client(params, errlog=cast(TextIO, log))
        elif isinstance(source, ContainerImage):
            transport = container_transport(
                where.docker(),
                source.image,
                job_id=where.job_id,
                server=spec.name,
                environment=secrets,
                stderr=stderr,
            )
        else:
            transport = streamable_http_client(
                source.url, http_client=_http_client(spec, source, secrets, where)
            )
        client = Client(transport, mode="auto", client_info=CLIENT_INFO, cache=None)
        yield await stack.enter_async_context(client)


@contextlib.asynccontextmanager
async def open_builtin(server: MCPServer) -> AsyncIterator[Client]:
    """A client of a server of Neo's own, in this process: the same protocol, no transport."""
    async with Client(server, mode="auto", client_info=CLIENT_INFO, cache=None) as client:
        yield client


def _http_client(
    spec: ServerSpec, source: Remote, secrets: Mapping[str, str], where: Where
) -> httpx2.AsyncClient:
    refusal = url_refusal(source.url, where.policy, where.operator)
    if refusal is not None:
        raise Refused(refusal)
    headers = {
        name: _SECRET_REFERENCE.sub(lambda m: secrets.get(m.group(1), ""), value)
        for name, value in source.headers
    }
    timeout = httpx2.Timeout(
        spec.startup_timeout, read=max(spec.startup_timeout, spec.call_timeout) + 5.0
    )
    if where.operator.vouches_for(source.url):
        # The operator's own endpoint, maybe on this host: no policy, no proxy.
        return httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False)
    return checked_client(where.policy, headers=headers, timeout=timeout, resolve=where.resolve)


def _tail_into(log: IO[bytes], stderr: bytearray, keep: int = 8 * 1024) -> None:
    """The end of a command's stderr file, into `stderr`."""
    try:
        size = log.seek(0, 2)
        log.seek(max(0, size - keep))
        stderr.extend(log.read())
    except OSError:
        pass


def _version() -> str:
    try:
        return importlib.metadata.version("neo")
    except importlib.metadata.PackageNotFoundError:
        return "0"


CLIENT_INFO = Implementation(name="neo", version=_version())
