"""The docker sandbox: one disposable container per job, driven over one stream.

    async with DockerSandbox.start(tree, image="neo-sandbox:local", job_id=job.id) as sandbox:
        tools = tools_for(model, sandbox)

No secret, no network but loopback (and, when given one, the job's egress
proxy through a socket: runner.network.proxy), no capabilities, a root of
which the sandbox user may write only the prepared environment's directory;
removed however the run ends. docs/architecture.md, "Sandboxes", has the
whole contract; the environment setup prepares is `runner.sandbox.preparing`'s.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib.resources
import io
import json
import os
import re
import secrets
import shlex
import socket
import ssl
import struct
import tarfile
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import docker
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound, NotFound

from runner.network.relay import SOCKET_DIR, SOCKET_PATH, proxy_environment
from runner.sandbox import exec_server
from runner.sandbox.base import (
    BackgroundOutput,
    ExecResult,
    Lines,
    PathOutsideTree,
    SandboxError,
    UnknownBackground,
    background_of,
    stopped_of,
)
from runner.sandbox.environment import (
    ENV_ROOT,
    HOME,
    NODE_MODULES,
    NODE_MODULES_LINK,
    container_environment,
    image_variables,
)
from runner.sandbox.output_buffer import OUTPUT_LIMIT

# First defined here: callers import them from here too.
from runner.sandbox.owners import LABEL_OWNER as LABEL_OWNER
from runner.sandbox.owners import LABEL_STARTED as LABEL_STARTED
from runner.sandbox.owners import is_orphan as is_orphan
from runner.sandbox.owners import owner_label as owner_label
from runner.sandbox.owners import owner_labels
from runner.sandbox.owners import process_alive as process_alive
from runner.sandbox.ownership import SANDBOX_UID as SANDBOX_UID
from runner.sandbox.ownership import Loan, hand_over, lend
from runner.sandbox.removal import remove_container
from runner.text import one_line

WORKSPACE = "/workspace"

LABEL_SANDBOX = "neo.sandbox"
LABEL_JOB = "neo.job"

# The agent's process name is `neo-agent`, so a command's `pkill -f python`
# misses it. The bootstrap reads the agent's length-prefixed source from stdin.
_BOOTSTRAP = (
    "import sys;b=sys.stdin.buffer;n=int(b.readline());"
    "exec(compile(b.read(n),'neo-agent','exec'),{'__name__':'__neo_agent__'})"
)
_COMMAND = ["bash", "-c", 'exec -a neo-agent python3 -I -c "$1" "${@:2}"', "neo-agent", _BOOTSTRAP]

READY_TIMEOUT = 60.0
# How much longer than a command's own timeout the runner waits for its
# answer before judging the agent hung.
_ANSWER_MARGIN = 30.0
_FILE_TIMEOUT = 300.0
# A background command's start, read or stop answers at once (a stop waits
# for its pipe for at most the agent's drain time).
_BACKGROUND_TIMEOUT = 30.0
# The agent reads files up to 512 MiB, which travel as one base64 line.
_MAX_LINE = 1024 * 1024 * 1024
_STDERR_KEPT = 4096
_STDOUT, _STDERR = 1, 2

GiB = 1024 * 1024 * 1024
MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """What one sandbox may use."""

    memory: int = 4 * GiB  # bytes; swap is not allowed beyond it
    cpus: float = 2.0
    pids: int = 512
    # Writable scratch space (tmpfs, counted in `memory` as it fills).
    tmp: int = 1 * GiB
    home: int = 1 * GiB


@dataclass(frozen=True, slots=True)
class Role:
    """What a sandbox container is for: the agent's (`AGENT`), or a setup
    container that is committed as the prepared environment
    (`runner.sandbox.preparing`)."""

    # "setup": the egress proxy keeps setup's policy; "agent": it is switched
    # to the agent's before the sandbox is handed out.
    phase: Literal["setup", "agent"] = "agent"
    # Make the prepared environment's directory the sandbox user's, for an
    # image without one.
    env_root: bool = False
    # The first request id: the proxy's log names commands by id, and a
    # setup container's must not be taken for the agent's.
    first_id: int = 1
    # Whether the variables that lead commands to the proxy are in the
    # container's own environment: `docker commit` keeps it, so a setup
    # container leaves them out and passes them to each command instead.
    proxy_env: bool = True


AGENT = Role()


class Egress(Protocol):
    """The sandbox's one way out: a proxy whose socket lives in a volume
    (runner.network.proxy.EgressProxy), with setup's policy until `agent_phase`."""

    @property
    def volume(self) -> str: ...

    async def ready(self) -> None: ...

    async def agent_phase(self) -> None: ...


# The API version each engine agreed to, by the variables that name the engine:
# a new client asks for it (GET /version) unless told, once per job otherwise.
_VERSIONS: dict[tuple[str, ...], str] = {}
_ENGINE_VARIABLES = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")


def docker_client() -> DockerClient:
    """A client for the engine the environment names (DOCKER_HOST or the default socket)."""
    engine = tuple(os.environ.get(name, "") for name in _ENGINE_VARIABLES)
    try:
        client = docker.from_env(version=_VERSIONS.get(engine))
    except DockerException as error:
        raise SandboxError(f"docker is not reachable: {one_line(error)}") from None
    _VERSIONS[engine] = client.api.api_version
    return client


def container_name(job_id: str) -> str:
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", job_id).strip("-.")[:40] or "job"
    return f"neo-{slug}-{secrets.token_hex(4)}"


def host_config(
    tree: Path, *, user: tuple[int, int], limits: Limits, egress_volume: str | None = None
) -> dict[str, Any]:
    """The HostConfig arguments of a sandbox container.

    No network but loopback, always: the egress proxy's socket, in
    `egress_volume` mounted read-only, is the only way out.
    """
    uid, gid = user
    scratch = "rw,exec,nosuid,nodev"
    binds = {str(tree): {"bind": WORKSPACE, "mode": "rw"}}
    if egress_volume is not None:
        # nocopy: Docker would otherwise copy the image's SOCKET_DIR (its
        # files, owner and mode) into the volume while it is still empty,
        # and a prepared environment's, committed with the mount point in
        # it, is root's: squid's user could then not make its socket.
        binds[egress_volume] = {"bind": SOCKET_DIR, "mode": "ro,nocopy"}
    # Paths inside the container, each its own fresh tmpfs.
    return {
        "binds": binds,
        "tmpfs": {
            "/tmp": f"{scratch},size={limits.tmp},mode=1777",  # noqa: S108
            "/var/tmp": f"{scratch},size={limits.tmp},mode=1777",  # noqa: S108
            HOME: f"{scratch},size={limits.home},uid={uid},gid={gid},mode=0755",
        },
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,
        "nano_cpus": int(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        # Writable for the prepared environment (ENV_ROOT), which `docker
        # commit` keeps: the user has no capability, so only what it owns
        # (that directory) and the world-writable ones are open to it.
        "read_only": False,
        # docker-init (tini) as PID 1 reaps what commands leave behind.
        "init": True,
        "network_mode": "none",
        # The channel's traffic is not the container's log.
        "log_config": {"type": "none", "config": {}},
    }


def labels(job_id: str, *, started: float, owner: Mapping[str, str]) -> dict[str, str]:
    """A sandbox's labels; `owner`: its runner's (`owner_labels`)."""
    return {LABEL_SANDBOX: "1", LABEL_JOB: job_id, LABEL_STARTED: str(int(started)), **owner}


def sweep_orphans(client: DockerClient, *, max_age: float) -> list[str]:
    """Remove sandbox containers left over from a crash; their ids.

    Removed: those whose runner process on this host is gone, and those of
    other hosts started more than `max_age` seconds ago (see `is_orphan`).
    """
    host = socket.gethostname()
    now = time.time()
    removed: list[str] = []
    for summary in client.api.containers(all=True, filters={"label": f"{LABEL_SANDBOX}=1"}):
        found = summary.get("Labels") or {}
        if not is_orphan(found, host=host, now=now, max_age=max_age, alive=process_alive):
            continue
        if remove_container(client, summary["Id"]):
            removed.append(str(summary["Id"]))
    return removed


def _remove_quietly(client: DockerClient, container: str, loan: Loan) -> None:
    """Remove the container, then give the tree back: no command is left to write in it."""
    try:
        with contextlib.suppress(DockerException, OSError):
            remove_container(client, container)
    finally:
        loan.give_back()


def _tree_root(tree: Path) -> Path:
    root = Path(os.path.realpath(tree))
    if not root.is_dir():
        raise SandboxError(f"sandbox tree is not a directory: {tree}")
    return root


def plain_socket(attached: Any) -> socket.socket:
    """A socket of our own on the attached stream, from what docker-py returns."""
    raw = getattr(attached, "_sock", attached)
    if isinstance(raw, ssl.SSLSocket) or not isinstance(raw, socket.socket):
        raise SandboxError(
            "the docker sandbox needs the docker engine on a unix socket or plain tcp"
        )
    own = raw.dup()
    # docker-py's objects hold the original descriptor: closing it leaves ours
    # as the only one, so closing ours (or dying) ends the stream.
    attached.close()
    raw.close()
    return own


class _Channel:
    """Requests to the agent and its answers, matched by id, over one stream."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        why_ended: Callable[[str], Awaitable[str]],
        first_id: int = 1,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._why_ended = why_ended
        self._next_id = first_id
        loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {0: self._ready}
        self._ended: str | None = None
        self._stderr = bytearray()
        # The argv of each command by request id: the egress proxy's log names the id.
        self.commands: dict[int, list[str]] = {}
        self._task = asyncio.create_task(self._read())

    async def ready(self, timeout: float) -> dict[str, Any]:
        """The agent's ready message."""
        try:
            return await asyncio.wait_for(self._ready, timeout)
        except TimeoutError:
            raise SandboxError(f"the sandbox agent did not start within {timeout:g}s") from None

    async def call(self, request: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        if self._ended is not None:
            raise SandboxError(self._ended)
        ident = self._next_id
        self._next_id += 1
        if request.get("op") in ("run", "spawn"):
            self.commands[ident] = list(request["argv"])
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            self._writer.write(_encode({"id": ident, **request}))
            with contextlib.suppress(ConnectionError, OSError):
                # A broken stream ends the reader too, which fails the future.
                await self._writer.drain()
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise SandboxError(f"the sandbox did not answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            if request.get("op") == "run" and self._ended is None:
                # The caller gave up: end the command and all it started.
                self._writer.write(_encode({"id": 0, "op": "cancel", "target": ident}))
            raise
        finally:
            self._pending.pop(ident, None)

    async def close(self) -> None:
        self._end("the sandbox is closed")
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await asyncio.wait_for(self._writer.wait_closed(), 5)

    def _end(self, reason: str) -> None:
        if self._ended is None:
            self._ended = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(SandboxError(self._ended))
                # Nobody may be waiting on it (the ready future after a start failure).
                future.exception()
        self._pending.clear()

    async def _read(self) -> None:
        """Demultiplex docker's stream (8-byte frame headers), answer by id."""
        line: list[bytes] = []
        size = 0
        problem = ""
        try:
            while True:
                kind, length = struct.unpack(">BxxxL", await self._reader.readexactly(8))
                payload = await self._reader.readexactly(length)
                if kind == _STDERR:
                    self._stderr += payload
                    del self._stderr[:-_STDERR_KEPT]
                    continue
                if kind != _STDOUT:
                    continue
                start = 0
                while (end := payload.find(b"\n", start)) >= 0:
                    line.append(payload[start:end])
                    self._dispatch(b"".join(line))
                    line, size, start = [], 0, end + 1
                line.append(payload[start:])
                size += length - start
                if size > _MAX_LINE:
                    problem = "the sandbox agent sent an oversized message"
                    break
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except ValueError as error:
            problem = f"the sandbox agent sent a malformed message ({one_line(error)})"
        except Exception as error:  # whatever it is, callers must not wait forever
            problem = f"the exec channel failed ({type(error).__name__}: {one_line(error)})"
        detail = problem or self._last_stderr_line()
        try:
            reason = await self._why_ended(detail)
        except Exception:  # the diagnosis must not keep callers waiting
            reason = f"the sandbox's exec channel closed: {detail}".rstrip(": ")
        self._end(reason)

    def _dispatch(self, line: bytes) -> None:
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("not an object")
        ident = message.get("id")
        future = self._pending.get(ident) if isinstance(ident, int) else None
        if future is not None and not future.done():
            future.set_result(message)

    def _last_stderr_line(self) -> str:
        lines = bytes(self._stderr).decode("utf-8", "replace").strip().splitlines()
        return lines[-1][:200] if lines else ""


_encode = exec_server.encode_line


def _agent_source() -> bytes:
    return importlib.resources.files("runner.sandbox").joinpath("exec_server.py").read_bytes()


class DockerSandbox:
    """A Sandbox in a docker container; open it with `DockerSandbox.start`."""

    def __init__(
        self, client: DockerClient, name: str, limits: Limits, loan: Loan, first_id: int = 1
    ) -> None:
        self._client = client
        self._name = name
        self._limits = limits
        self._first_id = first_id
        self._channel: _Channel | None = None
        # The last resort: at interpreter exit, or if this object is dropped
        # without being closed. Calling it later does nothing.
        self._finalizer = weakref.finalize(self, _remove_quietly, client, name, loan)

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls,
        tree: Path,
        *,
        image: str,
        job_id: str,
        # Frozen values: sharing the defaults is safe.
        limits: Limits = Limits(),
        egress: Egress | None = None,
        role: Role = AGENT,
        client: DockerClient | None = None,
        give_tree: bool = False,
    ) -> AsyncIterator[DockerSandbox]:
        """Start a sandbox on `tree` from `image`; remove it when the block ends.

        Without `egress` nothing but loopback is reachable; with it,
        commands reach the network through that proxy, which is switched to
        the agent's policy before the sandbox is handed out unless `role`
        is setup's (`Role` says what else that changes). The tree is lent to
        the commands' user and given back, or with `give_tree` (a tree made
        for this run and deleted after it) given to it for good
        (`runner.sandbox.ownership`).
        """
        if client is None:
            client = await asyncio.to_thread(docker_client)
        root = await asyncio.to_thread(_tree_root, tree)
        # Given back when the container is removed (the finalizer), however
        # the run ends; a tree given has nothing to give back.
        handed = hand_over if give_tree else lend
        loan = await asyncio.to_thread(handed, root, fallback_uid=SANDBOX_UID)
        sandbox = cls(client, container_name(job_id), limits, loan, role.first_id)
        try:
            await sandbox._create(
                root,
                image=image,
                job_id=job_id,
                user=loan.user,
                egress=egress,
                proxy_env=role.proxy_env,
            )
            await sandbox._open(egress=egress is not None)
            if egress is not None:
                # Started before the sandbox, it came up meanwhile.
                await egress.ready()
            if role.env_root:
                await sandbox._give_env_root(loan.user)
            if egress is not None and role.phase == "agent":
                await egress.agent_phase()
            yield sandbox
        finally:
            await sandbox.aclose()

    @property
    def root(self) -> str:
        return WORKSPACE

    @property
    def container(self) -> str:
        """The container's name (docker accepts it wherever an id goes)."""
        return self._name

    def command_text(self, ident: int) -> str | None:
        """The command request `ident` ran, as one would type it; None if it was none."""
        argv = self._channel.commands.get(ident) if self._channel is not None else None
        if argv is None:
            return None
        # The shell tool wraps its argv in `bash -c 'exec "$@"' shell ...`.
        if argv[:3] == ["bash", "-c", 'exec "$@"']:
            argv = argv[4:]
        # The bash tool runs `bash -c LINE` (models, `bash -lc`): the line is the command.
        if len(argv) == 3 and argv[0] == "bash" and argv[1] in ("-c", "-lc"):
            return argv[2]
        return shlex.join(argv)

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if not argv:
            raise ValueError("argv is empty")
        request = {
            "op": "run",
            "argv": list(argv),
            "cwd": cwd,
            "env": dict(env or {}),
            "timeout": timeout,
            "limit": OUTPUT_LIMIT,
        }
        answer = await self._call(
            request, timeout=timeout + 2 * exec_server.DRAIN_SECONDS + _ANSWER_MARGIN, path=cwd
        )
        try:
            return ExecResult(
                int(answer["exit_code"]),
                base64.b64decode(answer["output"], validate=True),
                bool(answer["timed_out"]),
                _optional_int(answer.get("total_bytes")),
                _optional_int(answer.get("total_lines")),
                *stopped_of(answer),
            )
        except (KeyError, TypeError, ValueError):
            raise SandboxError("the sandbox agent sent a malformed answer") from None

    async def start_background(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        if not argv:
            raise ValueError("argv is empty")
        request = {"op": "spawn", "argv": list(argv), "cwd": cwd, "env": dict(env or {})}
        answer = await self._call(request, timeout=_BACKGROUND_TIMEOUT, path=cwd)
        target = answer.get("target")
        if not isinstance(target, str):
            raise SandboxError("the sandbox agent sent a malformed answer")
        return target

    async def background_output(self, ident: str) -> BackgroundOutput:
        return await self._background({"op": "output", "target": ident})

    async def stop_background(self, ident: str) -> BackgroundOutput:
        return await self._background({"op": "stop", "target": ident})

    async def _background(self, request: dict[str, Any]) -> BackgroundOutput:
        answer = await self._call(request, timeout=_BACKGROUND_TIMEOUT, path=None)
        try:
            return background_of(answer, base64.b64decode(answer["output"], validate=True))
        except (KeyError, TypeError, ValueError):
            raise SandboxError("the sandbox agent sent a malformed answer") from None

    async def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        request = {"op": "read", "path": path, "offset": offset, "limit": limit}
        answer = await self._call(request, timeout=_FILE_TIMEOUT, path=path)
        try:
            return base64.b64decode(answer["data"], validate=True)
        except (KeyError, TypeError, ValueError):
            raise SandboxError("the sandbox agent sent a malformed answer") from None

    async def read_lines(
        self,
        path: str,
        *,
        start: int,
        count: int,
        max_line_bytes: int,
        max_bytes: int,
        max_scan: int,
    ) -> Lines:
        request = {
            "op": "lines",
            "path": path,
            "start": start,
            "count": count,
            "max_line_bytes": max_line_bytes,
            "max_bytes": max_bytes,
            "max_scan": max_scan,
        }
        # The agent reads the file where it is: only the window travels.
        answer = await self._call(request, timeout=_FILE_TIMEOUT, path=path)
        try:
            data = base64.b64decode(answer["data"], validate=True)
            lines = tuple(data.split(b"\n")) if answer["count"] else ()
            chars = tuple(int(n) for n in answer["chars"])
            if len(lines) != answer["count"] or len(chars) != len(lines):
                raise ValueError("the window's parts disagree")
            return Lines(
                lines,
                chars,
                int(answer["total_lines"]),
                bool(answer["complete"]),
                int(answer["size"]),
            )
        except (KeyError, TypeError, ValueError):
            raise SandboxError("the sandbox agent sent a malformed answer") from None

    async def write(self, path: str, data: bytes) -> None:
        request = {
            "op": "write",
            "path": path,
            "data": data if type(data) is bytes else bytes(data),
        }
        await self._call(request, timeout=_FILE_TIMEOUT, path=path)

    async def stop(self) -> None:
        """Close the channel and wait for the container to exit, every process
        in it ended; it stays, stopped, until the block ends (for `docker commit`)."""
        if self._channel is not None:
            await self._channel.close()
        try:
            await asyncio.to_thread(self._client.api.wait, self._name, timeout=30)
        except (DockerException, OSError) as error:
            raise SandboxError(f"the sandbox did not stop: {one_line(error)}") from None

    async def aclose(self) -> None:
        """Close the channel and remove the container; safe to call twice."""
        try:
            if self._channel is not None:
                await self._channel.close()
        finally:
            try:
                # The removal goes on in its thread if this is cancelled again.
                await asyncio.shield(asyncio.to_thread(self._finalizer))
            except RuntimeError:
                # The loop's executor is shut down: remove it now, blocking.
                self._finalizer()

    async def _call(
        self, request: dict[str, Any], *, timeout: float, path: str | None
    ) -> dict[str, Any]:
        if self._channel is None:
            raise SandboxError("the sandbox is not started")
        answer = await self._channel.call(request, timeout=timeout)
        if answer.get("ok") is True:
            return answer
        error = answer.get("error")
        error = error if isinstance(error, dict) else {}
        message = str(error.get("message", ""))
        kind = error.get("type")
        if kind == "outside":
            raise PathOutsideTree(message)
        if kind == "unknown":
            raise UnknownBackground(message)
        code = error.get("errno")
        if kind == "os" and isinstance(code, int):
            # OSError picks the subclass (FileNotFoundError, ...) from errno.
            if path is None:
                raise OSError(code, message)
            raise OSError(code, message, path)
        raise SandboxError(f"the sandbox agent failed: {message or 'no reason given'}")

    async def _create(
        self,
        tree: Path,
        *,
        image: str,
        job_id: str,
        user: tuple[int, int],
        egress: Egress | None,
        proxy_env: bool,
    ) -> None:
        api = self._client.api
        volume = egress.volume if egress is not None else None
        config = host_config(tree, user=user, limits=self._limits, egress_volume=volume)
        command = [*_COMMAND, WORKSPACE]
        if egress is not None:
            command += ["--egress", SOCKET_PATH]
        try:
            # The image's own variables are kept (a custom image's PATH first).
            found = await asyncio.to_thread(self._client.images.get, image)
            environment = container_environment(
                image_variables((found.attrs.get("Config") or {}).get("Env")),
                proxy_environment() if egress is not None and proxy_env else None,
            )
            await asyncio.to_thread(
                api.create_container,
                image,
                # Whatever the image's entrypoint, docker-init starts the agent.
                entrypoint=command,
                name=self._name,
                user=f"{user[0]}:{user[1]}",
                environment=environment,
                working_dir=WORKSPACE,
                labels=labels(job_id, started=time.time(), owner=owner_labels()),
                stdin_open=True,
                host_config=api.create_host_config(**config),
            )
        except ImageNotFound:
            raise SandboxError(
                f"sandbox image {image} not found (build it with scripts/build-images)"
            ) from None
        except DockerException as error:
            raise SandboxError(f"cannot create the sandbox: {one_line(error)}") from None

    async def _open(self, *, egress: bool) -> None:
        api = self._client.api
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        try:
            attached = await asyncio.to_thread(api.attach_socket, self._name, params=params)
            own = plain_socket(attached)
            await asyncio.to_thread(api.start, self._name)
        except DockerException as error:
            raise SandboxError(f"cannot start the sandbox: {one_line(error)}") from None
        reader, writer = await asyncio.open_connection(sock=own)
        source = _agent_source()
        writer.write(b"%d\n" % len(source) + source)
        self._channel = _Channel(reader, writer, self._why_ended, self._first_id)
        ready = await self._channel.ready(READY_TIMEOUT)
        if egress and ready.get("relay_error"):
            raise SandboxError(f"the sandbox's egress relay failed: {ready['relay_error']}")

    async def _give_env_root(self, user: tuple[int, int]) -> None:
        """Make the environment's directory, and /node_modules leading into it, as an
        image of Neo's has them, the directory the sandbox user's (as root, by the API)."""
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as archive:
            root = tarfile.TarInfo(ENV_ROOT.lstrip("/"))
            root.type, root.mode = tarfile.DIRTYPE, 0o777
            root.uid, root.gid = user
            archive.addfile(root)
            # An image's own /node_modules stays.
            test = ["test", "-e", NODE_MODULES_LINK, "-o", "-L", NODE_MODULES_LINK]
            if (await self.run(test, timeout=30)).exit_code != 0:
                link = tarfile.TarInfo(NODE_MODULES_LINK.lstrip("/"))
                link.type, link.linkname = tarfile.SYMTYPE, NODE_MODULES
                archive.addfile(link)
        try:
            await asyncio.to_thread(self._client.api.put_archive, self._name, "/", data.getvalue())
        except DockerException as error:
            raise SandboxError(
                f"cannot make {ENV_ROOT} in the sandbox: {one_line(error)}"
            ) from None

    async def _why_ended(self, detail: str) -> str:
        """One line on why the channel ended, from the container's state."""
        try:
            state = await asyncio.wait_for(asyncio.to_thread(self._stopped_state), 10)
        except (TimeoutError, DockerException, OSError, KeyError):
            state = None
        if state is None or state.get("Running"):
            reason = "the sandbox's exec channel closed"
        elif state.get("OOMKilled"):
            # Docker marks any OOM kill in the container, not only the agent's.
            limit = self._limits.memory // MiB
            reason = (
                f"the sandbox stopped (exit code {state.get('ExitCode')})"
                f" after hitting its memory limit of {limit} MiB"
            )
        else:
            reason = f"the sandbox stopped (exit code {state.get('ExitCode')})"
        return f"{reason}: {detail}" if detail else reason

    def _stopped_state(self) -> dict[str, Any] | None:
        api = self._client.api
        # Give a dying container a moment to be seen as stopped.
        with contextlib.suppress(DockerException, OSError):
            api.wait(self._name, timeout=2)
        try:
            state = api.inspect_container(self._name)["State"]
        except NotFound:
            return None
        return state if isinstance(state, dict) else None


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int):
        raise TypeError("not an integer")
    return value
