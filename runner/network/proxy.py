"""One job's egress proxy: squid in a container of its own, reached through a socket.

    async with EgressProxy.start(client, job_id=job.id, plan=plan) as proxy:
        async with DockerSandbox.start(tree, ..., egress=proxy) as sandbox:
            ...
    blocked = proxy.blocked(sandbox.command_text)

A job starts its proxy's container before it knows its plan (`launch`: the
engine takes most of a second to start a container with a network, time the
job's clone can use), then says the plan (`configure`) and the policy the
socket leads to first (`begin`: the agent's when no setup runs, so there is
no switch to wait for).

The sandbox has no network at all. The proxy's container shares a volume
with it that holds one unix socket; inside the sandbox the exec server's
relay forwards 127.0.0.1:3128 to that socket, and inside the proxy socat
forwards it to squid's port of the current phase: setup's first (unless
no setup runs), then, from `agent_phase()` on, the agent's (the setup relay
and every connection through it are killed then). The script that runs both
(`runner.network.program`) is the container's command, and squid's
configuration (`runner.network.squid`) arrives over its stdin, which the
runner holds: when the runner goes, even by SIGKILL, stdin ends, the script
stops squid, and the container exits. The volume's directory belongs to
squid's user, as the proxy's image has it; the sandbox mounts it without
Docker's copy-up, so no sandbox image can take it back. squid's access log comes back on
stdout and is parsed as it comes (`runner.network.accesses`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Literal

from docker import DockerClient
from docker.errors import DockerException, ImageNotFound
from docker.types import LogConfig

from runner.network.accesses import Blocked, blocked_requests

# First defined there: callers import them from here too.
from runner.network.engine import EGRESS_NETWORK as EGRESS_NETWORK
from runner.network.engine import LABEL_EGRESS as LABEL_EGRESS
from runner.network.engine import network_of, remove_quietly
from runner.network.engine import sweep_egress as sweep_egress
from runner.network.host_addresses import HostProbe, outside_ranges
from runner.network.policy import Plan
from runner.network.program import AGENT, READY, SCRIPT
from runner.network.proxy_output import ProxyOutput
from runner.network.relay import SOCKET_DIR
from runner.network.squid import squid_config
from runner.sandbox.base import SandboxError
from runner.sandbox.docker import LABEL_JOB, container_name, plain_socket
from runner.sandbox.owners import LABEL_STARTED, owner_labels
from runner.text import one_line

__all__ = [
    "EGRESS_IMAGE",
    "EGRESS_NETWORK",
    "LABEL_EGRESS",
    "EgressProxy",
    "Phase",
    "sweep_egress",
]

EGRESS_IMAGE = "neo-egress:local"
Phase = Literal["setup", "agent"]
READY_TIMEOUT = 30.0
_STOP_TIMEOUT = 10.0
_MiB = 1024 * 1024
# The Docker host's interface addresses, read once for the process's proxies.
HOST_PROBE = HostProbe()


class EgressProxy:
    """A job's proxy; open it with `EgressProxy.start`, or `launch` it."""

    def __init__(self, client: DockerClient, name: str) -> None:
        self._client = client
        self._name = name
        self._plan: Plan | None = None
        # The policy the socket leads to: the first one `begin` named, then the agent's.
        self._phase: Phase | None = None
        self._first: Phase | None = None
        self._configured = asyncio.Event()  # the plan and the first phase are known
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None  # the engine's start
        self._booting: asyncio.Task[None] | None = None  # then squid.conf sent
        self._output = ProxyOutput()
        # The host's addresses on the engine's networks, read as it is created.
        self._gateways: set[str] = set()
        self._finalizer = weakref.finalize(self, remove_quietly, client, name)

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls,
        client: DockerClient,
        *,
        job_id: str,
        plan: Plan,
        networks: Sequence[str] = (EGRESS_NETWORK,),
        image: str = EGRESS_IMAGE,
        dns: Sequence[str] = (),
    ) -> AsyncIterator[EgressProxy]:
        """A proxy for `plan`, in setup's phase, started (squid still coming
        up: `ready` waits for it, so the sandbox starts meanwhile); removed,
        with its socket's volume, when the block ends. The rest is `launch`'s."""
        if plan.off:
            raise ValueError("an egress proxy needs a plan that is not off")
        proxy = await cls.launch(client, job_id=job_id, networks=networks, image=image, dns=dns)
        try:
            proxy.configure(plan)
            proxy.begin("setup")
            yield proxy
        finally:
            await proxy.aclose()

    @classmethod
    async def launch(
        cls,
        client: DockerClient,
        *,
        job_id: str,
        networks: Sequence[str] = (EGRESS_NETWORK,),
        image: str = EGRESS_IMAGE,
        dns: Sequence[str] = (),
    ) -> EgressProxy:
        """A proxy whose container is starting, before its plan is known: squid
        starts once `configure` and `begin` have said it. The caller removes
        it, with its socket's volume, with `aclose`. `networks` are the
        Docker networks it reaches the outside from, the first created if it
        is Neo's own and missing. `dns`: the servers squid resolves names with
        (addresses; none: the engine's)."""
        if not networks:
            raise ValueError("an egress proxy needs a network")
        proxy = cls(client, container_name(job_id).replace("neo-", "neo-egress-", 1))
        try:
            labels = await proxy._create(job_id, list(networks), image, list(dns))
            await proxy._open(image, labels)
        except BaseException:
            await proxy.aclose()
            raise
        return proxy

    def configure(self, plan: Plan) -> None:
        """The policies this proxy enforces: `plan.setup` on setup's side,
        `plan.agent` on the agent's; said once."""
        if plan.off:
            raise ValueError("an egress proxy needs a plan that is not off")
        if self._plan is not None:
            raise RuntimeError("the egress proxy's plan is set already")
        self._plan = plan
        if self._first is not None:
            self._configured.set()

    def begin(self, phase: Phase) -> None:
        """The policy the socket leads to first: setup's when setup runs, else
        the agent's, with no switch to wait for. Once said, later calls change nothing."""
        if self._first is None:
            self._first = phase
            if self._plan is not None:
                self._configured.set()

    @property
    def volume(self) -> str:
        """The volume holding the proxy's socket, for the sandbox to mount at SOCKET_DIR."""
        return self._name

    @property
    def container(self) -> str:
        return self._name

    async def ready(self) -> None:
        """Wait until squid listens and the socket leads to it (`configure` and
        `begin` must have been called, or it times out)."""
        if self._booting is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._booting), READY_TIMEOUT)
            except TimeoutError:
                raise SandboxError("the egress proxy was never configured") from None
        await self._output.wait_for(READY, "the egress proxy did not start", READY_TIMEOUT)

    async def agent_phase(self) -> None:
        """From now on the socket leads to the agent's policy; setup's connections end."""
        await self.ready()
        if self._phase == "agent":
            return
        if self._writer is None or self._output.ended.is_set():
            raise SandboxError(self._output.failure("the egress proxy stopped"))
        self._writer.write(AGENT.encode() + b"\n")
        await self._writer.drain()
        await self._output.wait_for(
            AGENT, "the egress proxy did not switch to the agent's policy", READY_TIMEOUT
        )
        self._phase = "agent"

    def said(self) -> str:
        """The last KiBs squid and socat wrote to stderr: for a report of what went wrong."""
        return self._output.stderr_tail()

    def blocked(self, command: Callable[[int], str | None]) -> tuple[Blocked, ...]:
        """The hosts refused so far, each once, with the command (by request id) that tried."""
        if self._plan is None:
            return ()
        return blocked_requests(
            self._output.refused, agent=self._plan.agent, setup=self._plan.setup, command=command
        )

    async def aclose(self) -> None:
        """End stdin (squid stops, its last lines are read) and remove it all; safe twice."""
        try:
            if self._starting is not None:
                # The engine's start goes on in its thread whatever happens here.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(self._starting), _STOP_TIMEOUT)
            if self._booting is not None:
                # Still waiting for its plan, or its last write.
                self._booting.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await self._booting
            if self._writer is not None:
                self._writer.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await asyncio.wait_for(self._writer.wait_closed(), 5)
            if self._reader_task is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._reader_task), _STOP_TIMEOUT)
                self._reader_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader_task
        finally:
            try:
                await asyncio.shield(asyncio.to_thread(self._finalizer))
            except RuntimeError:
                self._finalizer()

    async def _create(
        self, job_id: str, networks: list[str], image: str, dns: list[str]
    ) -> dict[str, str]:
        """Create the container (not started) and its socket's volume; their labels."""
        api = self._client.api
        label = {
            LABEL_EGRESS: "1",
            LABEL_JOB: job_id,
            LABEL_STARTED: str(int(time.time())),
            **owner_labels(),
        }
        try:
            first, self._gateways = await asyncio.to_thread(network_of, self._client, networks[0])
            await asyncio.to_thread(api.create_volume, self._name, labels=label)
            config = api.create_host_config(
                binds={self._name: {"bind": SOCKET_DIR, "mode": "rw"}},
                tmpfs={"/tmp": "rw,nosuid,nodev,noexec,size=16m,mode=1777"},  # noqa: S108
                read_only=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                init=True,
                pids_limit=256,
                mem_limit=256 * _MiB,
                memswap_limit=256 * _MiB,
                network_mode=first,
                # On a network of its own the engine's resolver answers
                # containers' names and forwards the rest to these.
                dns=dns or None,
                log_config=LogConfig(type="none"),
            )
            await asyncio.to_thread(
                api.create_container,
                image,
                entrypoint=["sh", "-c", SCRIPT, "neo-egress"],
                name=self._name,
                labels=label,
                stdin_open=True,
                host_config=config,
            )
            for other in networks[1:]:
                await asyncio.to_thread(api.connect_container_to_network, self._name, other)
        except ImageNotFound:
            raise SandboxError(
                f"egress proxy image {image} not found (build it with scripts/build-images)"
            ) from None
        except DockerException as error:
            raise SandboxError(f"cannot create the egress proxy: {one_line(error)}") from None
        return label

    async def _open(self, image: str, labels: dict[str, str]) -> None:
        """Attach, then start it in the background: a container with a network
        takes the engine most of a second to start, time the sandbox's own
        start (or the job's clone) can use. The host's addresses are read
        meanwhile (`runner.network.host_addresses`): squid's configuration,
        which refuses them, is sent once the plan is known too."""
        api = self._client.api
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        try:
            attached = await asyncio.to_thread(api.attach_socket, self._name, params=params)
            own = plain_socket(attached)
        except DockerException as error:
            raise SandboxError(f"cannot start the egress proxy: {one_line(error)}") from None
        reader, self._writer = await asyncio.open_connection(sock=own)
        self._reader_task = asyncio.create_task(self._output.read(reader))
        self._starting = asyncio.create_task(self._start())
        self._booting = asyncio.create_task(self._boot(self._writer, image, labels))

    async def _start(self) -> None:
        try:
            await asyncio.to_thread(self._client.api.start, self._name)
        except DockerException as error:
            raise SandboxError(f"cannot start the egress proxy: {one_line(error)}") from None

    async def _boot(self, writer: asyncio.StreamWriter, image: str, labels: dict[str, str]) -> None:
        """Once its addresses are read and its plan known: squid.conf and the
        first phase, on stdin, which the engine holds for the script if it is
        not started yet (squid then starts as soon as it is); then the start."""
        assert self._starting is not None
        probed = asyncio.create_task(HOST_PROBE.addresses(self._client, image, labels))
        try:
            host = outside_ranges(self._gateways | await probed)
            await self._configured.wait()
        finally:
            probed.cancel()
        assert self._plan is not None
        assert self._first is not None
        data = squid_config(self._plan.agent, self._plan.setup, host).encode()
        writer.write(b"%d %s\n" % (len(data), self._first.encode()) + data)
        await writer.drain()
        self._phase = self._first
        await asyncio.shield(self._starting)
