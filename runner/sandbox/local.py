"""The sandbox that is the host itself: a directory and the host's processes.

It keeps paths inside the tree and secrets out of commands' environments. It
is no security boundary: a command can still reach anything the host user can,
so jobs from untrusted triggers run in the docker sandbox instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import stat
import subprocess
import sysconfig
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.sandbox.base import ExecResult, PathOutsideTree, SandboxError
from runner.sandbox.output import OutputBuffer

# Substrings of environment variable names that look like credentials, and
# whole families of variables that configure Neo or a model provider.
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "OPENROUTER_", "NEO_")
_SECRET_NAMES = frozenset({"GOOGLE_API_KEY", "GITHUB_TOKEN", "GH_TOKEN"})

# How long output may keep arriving after the command exits (background
# processes still holding its output pipe) before their process group is
# killed, and how long to wait for the pipe to close after a kill.
_DRAIN_SECONDS = 1.0


def is_secret_name(name: str) -> bool:
    """Whether an environment variable named `name` must not reach a command."""
    upper = name.upper()
    return (
        upper in _SECRET_NAMES
        or upper.startswith(_SECRET_PREFIXES)
        or any(marker in upper for marker in _SECRET_MARKERS)
    )


def command_env(
    host: Mapping[str, str], overrides: Mapping[str, str] | None, scripts_dir: str
) -> dict[str, str]:
    """The environment a command gets: `host` without secrets, then `overrides`.

    `scripts_dir` (where the `ripgrep` wheel installs `rg`) goes at the end of
    PATH, so `rg` is always found while the project's own `python`, `pip` and
    tools keep precedence over the interpreter running Neo.
    """
    env = {name: value for name, value in host.items() if not is_secret_name(name)}
    env.update(overrides or {})
    entries = [entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if entry]
    if scripts_dir not in entries:
        entries.append(scripts_dir)
    env["PATH"] = os.pathsep.join(entries)
    return env


def _shown(path: str) -> str:
    """`path` fit for a one-line message."""
    return path if path.isprintable() else repr(path)


def _kill_group(pgid: int) -> None:
    # The group outlives its leader while any member runs; once it is empty
    # there is nothing left to kill.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _within(waiter: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(waiter.wait(), seconds)
    except TimeoutError:
        return False
    return True


class _Collector(asyncio.SubprocessProtocol):
    """Gathers a command's output and tells when it exits and when its pipe closes.

    `asyncio.create_subprocess_exec`'s `wait()` on Python 3.11 returns only once
    the output pipe is closed, so a backgrounded child holding it would stall
    the call until the timeout; this protocol reports the exit itself.
    """

    def __init__(self) -> None:
        self.output = OutputBuffer()
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.output.append(data.encode() if isinstance(data, str) else data)

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


def _end_started(spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Collector]]) -> None:
    if spawn.cancelled() or spawn.exception() is not None:
        return
    transport, _ = spawn.result()
    _kill_group(transport.get_pid())
    transport.close()


class LocalSandbox:
    """Runs commands and touches files directly on the host, inside `root`."""

    def __init__(self, root: Path) -> None:
        resolved = Path(os.path.realpath(root))
        if not resolved.is_dir():
            raise SandboxError(f"sandbox root is not a directory: {_shown(str(root))}")
        self._root = resolved

    @property
    def root(self) -> str:
        return str(self._root)

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
        workdir = self._root if cwd is None else await asyncio.to_thread(self._directory, cwd)
        environment = command_env(os.environ, env, sysconfig.get_path("scripts"))
        loop = asyncio.get_running_loop()
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                _Collector,
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=environment,
                start_new_session=True,
            )
        )
        try:
            # Cancelled mid-start, asyncio would kill the new process but not
            # what it already started; the start is shielded and its group
            # ended once it completes.
            transport, collector = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            spawn.add_done_callback(_end_started)
            raise
        except FileNotFoundError:
            return ExecResult(127, f"{argv[0]}: command not found\n".encode())
        except PermissionError:
            return ExecResult(126, f"{argv[0]}: permission denied\n".encode())

        # start_new_session makes the child the leader of a new process group
        # whose id is its pid: killing the group reaches everything it started.
        pgid = transport.get_pid()
        timed_out = False
        try:
            if not await _within(collector.exited, timeout):
                timed_out = True
                _kill_group(pgid)
                await collector.exited.wait()
            if not await _within(collector.closed, _DRAIN_SECONDS):
                _kill_group(pgid)
                # A process that left the group (setsid) may hold the pipe
                # forever; its output is given up.
                await _within(collector.closed, _DRAIN_SECONDS)
        except BaseException:
            # Cancelled: end the command. Once its pipe has closed the group
            # may be empty and its id reusable, so it is left alone then.
            if not collector.closed.is_set():
                _kill_group(pgid)
            raise
        finally:
            transport.close()
        code = transport.get_returncode()
        output = collector.output
        return ExecResult(
            -9 if code is None else code,
            output.getvalue(),
            timed_out,
            output.total_bytes if output.dropped else None,
            output.total_lines if output.dropped else None,
        )

    async def read(self, path: str) -> bytes:
        return await asyncio.to_thread(self._read, path)

    async def write(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(self._write, path, data)

    def resolve(self, path: str) -> Path:
        """The real path `path` names, following symlinks; it may not exist yet.

        Raises PathOutsideTree unless it lies inside the tree.
        """
        if "\0" in path:
            raise PathOutsideTree(f"{_shown(path)} is not a valid path (NUL byte)")
        # An absolute `path` replaces the root in the join.
        joined = self._root / path
        # realpath follows every symlink that exists, including a dangling
        # final one, and resolves `..` after them, as the kernel would.
        resolved = Path(os.path.realpath(joined))
        if resolved.is_relative_to(self._root):
            return resolved
        if Path(os.path.normpath(joined)).is_relative_to(self._root):
            raise PathOutsideTree(f"{_shown(path)} resolves outside the working tree via a symlink")
        raise PathOutsideTree(f"{_shown(path)} is outside the working tree")

    def _directory(self, path: str) -> Path:
        target = self.resolve(path)
        if not target.exists():
            raise FileNotFoundError(errno.ENOENT, "no such directory", path)
        if not target.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        return target

    def _read(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def _write(self, path: str, data: bytes) -> None:
        target = self.resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = None
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        # Readers see the old content or the new, never a torn file.
        # Name it after the file (cut short: names have a length limit) so a
        # leftover after a crash says where it came from.
        temp = target.with_name(f".{target.name[:64]}.{uuid.uuid4().hex[:12]}.tmp")
        # 0o666 lets the umask decide a new file's mode, as open() would.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            if mode is not None:
                os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
