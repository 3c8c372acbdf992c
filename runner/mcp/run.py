"""What a run's gateway is given (`McpRun`), and the gateway opened for it.

A job and `neo run` open it before their sandbox, so that the servers start
while the sandbox does, with the network policy the sandbox gets; the run's
assembly (`runner.assembly`) registers its tools once it is ready. A run
without servers opens none, and never imports the SDK (a second of start-up).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runner.imports import imported
from runner.mcp.operator import Operator
from runner.mcp.reads import GitHubReads
from runner.mcp.servers import McpSettings
from runner.network.policy import NetworkPolicy

if TYPE_CHECKING:
    from docker import DockerClient

    from runner.mcp.gateway import Gateway

__all__ = ["NO_MCP", "McpRun", "open_gateway"]


@dataclass(frozen=True, slots=True)
class McpRun:
    """A run's servers, what the operator allows them, and the reads behind the built-in
    `github` server (None: no GitHub, so no such server)."""

    settings: McpSettings = field(default_factory=lambda: McpSettings(github=False))
    operator: Operator = field(default_factory=Operator)
    github: GitHubReads | None = field(default=None, compare=False, repr=False)


NO_MCP = McpRun()


@contextlib.asynccontextmanager
async def open_gateway(
    mcp: McpRun,
    policy: NetworkPolicy,
    *,
    job_id: str,
    docker: Callable[[], DockerClient] | None = None,
) -> AsyncIterator[Gateway | None]:
    """The gateway of `mcp`'s servers, started; their remote hosts within `policy`.
    None when there is no server to start."""
    if not mcp.settings.servers and (not mcp.settings.github or mcp.github is None):
        yield None
        return
    # Off the event loop: the SDK's first import takes seconds of CPU, which
    # would starve the heartbeats of a worker's other jobs (as open_run's SDKs);
    # and one importer at a time (`runner.imports` says why).
    await imported("runner.mcp.connect", "runner.mcp.gateway", "runner.mcp.github")
    from runner.mcp.connect import Where
    from runner.mcp.gateway import Gateway
    from runner.mcp.github import github_server

    github = None
    if mcp.settings.github and mcp.github is not None:
        github = github_server(mcp.github)
    where = Where(mcp.operator, policy, job_id=job_id, docker=docker)
    async with Gateway(mcp.settings, where, github=github) as gateway:
        yield gateway
