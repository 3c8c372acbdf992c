"""A docker sandbox's start, begun before its tree is there: the engine, and the proxy's container.

    launch = Launch(image, image_setting, job_id=job.id, network=True)
    ...                                   # the host clones meanwhile
    started = await launch.engine()       # what it raised, raised here
    started.proxy.configure(plan)         # squid starts: `runner.network.proxy`
    ...
    await launch.aclose()                 # removes the proxy (safe twice)

A job needs its tree to know its network plan and its environment (what
setup reads), but not to check the engine, create and start its egress
proxy's container, which takes the engine most of a second with a network
to join, or sweep what crashed runs left (done while that container
starts). Whether a job has a network at all is known before its tree is
(`runner.network.policy.may_reach`). `runner.sandbox.factory` runs every
docker start through one: begun early by a job (`launch_sandbox`), or when
the sandbox is opened.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from docker import DockerClient
from docker.errors import DockerException, ImageNotFound

from runner.errors import ConfigError
from runner.imports import imported
from runner.network.proxy import EgressProxy, sweep_egress
from runner.sandbox import docker as engine_module
from runner.sandbox.base import SandboxError
from runner.sandbox.factory import MAX_JOB_SECONDS, egress_dns, egress_networks
from runner.sandbox.image import image_problem
from runner.text import one_line

__all__ = ["Launch", "Started", "engine", "sweep"]


@dataclass(frozen=True, slots=True)
class Started:
    client: DockerClient
    image_id: str  # the sandbox image's
    # Its container started or starting, its plan not yet said; None: no network.
    proxy: EgressProxy | None


class Launch:
    """The engine checked and swept, and the proxy's container started when
    the job has a network (`network`), in the background from creation on."""

    def __init__(self, image: str, image_setting: str, *, job_id: str, network: bool) -> None:
        self._proxy: EgressProxy | None = None
        self._task = asyncio.create_task(self._run(image, image_setting, job_id, network))

    async def engine(self) -> Started:
        """What the launch started; raises what `open_environment` would: ConfigError
        for what the caller can fix, SandboxError when starting fails."""
        return await asyncio.shield(self._task)

    async def aclose(self) -> None:
        """Stop the launch if it is still under way, and remove the proxy; safe twice."""
        self._task.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await self._task
        if self._proxy is not None:
            await self._proxy.aclose()

    async def _run(self, image: str, image_setting: str, job_id: str, network: bool) -> Started:
        # Before the engine: it answers a malformed name with an HTTP 400, not a reason.
        problem = image_problem(image)
        if problem is not None:
            raise ConfigError(f"{image_setting}: {problem}")
        dns = egress_dns() if network else ()
        client, image_id = await engine(image, image_setting)
        if network:
            self._proxy = await EgressProxy.launch(
                client, job_id=job_id, networks=egress_networks(), dns=dns
            )
        # While the proxy's container starts: what crashed runs left is
        # nothing it needs gone.
        await sweep(client)
        return Started(client, image_id, self._proxy)


async def engine(image: str, image_setting: str) -> tuple[DockerClient, str]:
    """The Docker engine, reachable and holding `image`; and the image's id."""
    try:
        client = await asyncio.to_thread(engine_module.docker_client)
        await asyncio.to_thread(client.ping)
    except (SandboxError, DockerException) as error:
        raise ConfigError(
            f"docker is not reachable ({one_line(error)}); start dockerd or use --sandbox local"
        ) from None
    try:
        found = await asyncio.to_thread(client.images.get, image)
    except ImageNotFound:
        # Never pulled: jobs run only images built or loaded on this host.
        raise ConfigError(
            f"sandbox image {image} not found locally (build it with scripts/build-images, "
            f"or choose another with {image_setting})"
        ) from None
    except DockerException as error:
        raise SandboxError(f"cannot inspect sandbox image {image}: {one_line(error)}") from None
    return client, str(found.id)


async def sweep(client: DockerClient) -> None:
    """Remove the sandboxes, proxies and MCP containers crashed runs left."""
    # Loaded once the engine and the image are there: the MCP SDK alone costs a
    # refused start (no engine, no image) most of a second of CPU. Off the loop
    # and one importer at a time: the job's MCP gateway may be importing it too.
    await imported("runner.mcp.container")
    from runner.mcp.container import sweep_mcp

    await asyncio.to_thread(engine_module.sweep_orphans, client, max_age=MAX_JOB_SECONDS)
    await asyncio.to_thread(sweep_egress, client, max_age=MAX_JOB_SECONDS)
    await asyncio.to_thread(sweep_mcp, client, max_age=MAX_JOB_SECONDS)
