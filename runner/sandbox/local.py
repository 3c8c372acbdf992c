"""The sandbox that is the host itself: a directory, and processes that see no other.

Paths stay inside the tree, and secrets out of commands' reach: no secret in
their environment, no process outside the sandbox visible to them (`spawner`,
`isolation`). But it is no security boundary: docs/architecture.md,
"Sandboxes", and docs/local-sandbox.md.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import os
import stat
import sysconfig
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.sandbox import exec_server
from runner.sandbox.base import (
    COMMAND_ENV,
    BackgroundOutput,
    ExecResult,
    Lines,
    PathOutsideTree,
    SandboxError,
    background_of,
    stopped_of,
)
from runner.sandbox.spawner import Spawner

# Substrings of environment variable names that look like credentials, and
# whole families of variables that configure Neo or a model provider.
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "OPENROUTER_", "NEO_")
_SECRET_NAMES = frozenset({"GOOGLE_API_KEY", "GITHUB_TOKEN", "GH_TOKEN"})


# A background command's start, read or stop answers at once; stop waits for
# its pipe for at most the agent's drain time.
_BACKGROUND_TIMEOUT = 30.0


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
    """The environment a command gets: `host` without secrets, then
    `COMMAND_ENV`, then `overrides`.

    `scripts_dir` (where the `ripgrep` wheel installs `rg`) goes at the end of
    PATH, so `rg` is always found while the project's own `python`, `pip` and
    tools keep precedence over the interpreter running Neo.
    """
    env = {name: value for name, value in host.items() if not is_secret_name(name)}
    env.update(COMMAND_ENV)
    env.update(overrides or {})
    entries = [entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if entry]
    if scripts_dir not in entries:
        entries.append(scripts_dir)
    env["PATH"] = os.pathsep.join(entries)
    return env


def _shown(path: str) -> str:
    """`path` fit for a one-line message."""
    return path if path.isprintable() else repr(path)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int):
        raise TypeError("not an integer")
    return value


class LocalSandbox:
    """Runs commands and touches files directly on the host, inside `root`."""

    def __init__(self, root: Path) -> None:
        resolved = Path(os.path.realpath(root))
        if not resolved.is_dir():
            raise SandboxError(f"sandbox root is not a directory: {_shown(str(root))}")
        self._root = resolved
        self._spawner = Spawner(str(resolved))

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
        scripts = sysconfig.get_path("scripts")
        answer = await self._spawner.run(
            list(argv),
            cwd=str(workdir),
            env=command_env(os.environ, env, scripts),
            timeout=timeout,
            helper_env=command_env(os.environ, None, scripts),
        )
        try:
            return ExecResult(
                int(answer["exit_code"]),
                answer["output"],
                bool(answer["timed_out"]),
                _optional_int(answer.get("total_bytes")),
                _optional_int(answer.get("total_lines")),
                *stopped_of(answer),
            )
        except (KeyError, TypeError, ValueError):
            raise SandboxError(
                "the local sandbox's command runner sent a malformed answer"
            ) from None

    async def start_background(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        if not argv:
            raise ValueError("argv is empty")
        workdir = self._root if cwd is None else await asyncio.to_thread(self._directory, cwd)
        scripts = sysconfig.get_path("scripts")
        request = {
            "op": "spawn",
            "argv": list(argv),
            "cwd": str(workdir),
            "env": command_env(os.environ, env, scripts),
            "inherit_env": False,
        }
        answer = await self._background(request)
        target = answer.get("target")
        if not isinstance(target, str):
            raise SandboxError("the local sandbox's command runner sent a malformed answer")
        return target

    async def background_output(self, ident: str) -> BackgroundOutput:
        return self._background_output(await self._background({"op": "output", "target": ident}))

    async def stop_background(self, ident: str) -> BackgroundOutput:
        return self._background_output(await self._background({"op": "stop", "target": ident}))

    async def _background(self, request: dict[str, Any]) -> dict[str, Any]:
        helper_env = command_env(os.environ, None, sysconfig.get_path("scripts"))
        return await self._spawner.call(request, timeout=_BACKGROUND_TIMEOUT, helper_env=helper_env)

    def _background_output(self, answer: dict[str, Any]) -> BackgroundOutput:
        try:
            return background_of(answer, base64.b64decode(answer["output"], validate=True))
        except (KeyError, TypeError, ValueError):
            raise SandboxError(
                "the local sandbox's command runner sent a malformed answer"
            ) from None

    async def start(self) -> None:
        """Start the command runner now rather than at the first command.

        Raises SandboxUnavailable when this system cannot hide other
        processes from the commands (`isolation`).
        """
        await self._spawner.start(command_env(os.environ, None, sysconfig.get_path("scripts")))

    async def aclose(self) -> None:
        """End the command runner (and any command still running); safe to call twice."""
        self._spawner.close()

    async def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        return await asyncio.to_thread(self._read, path, offset, limit)

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
        window = await asyncio.to_thread(
            self._read_lines, path, (start, count, max_line_bytes, max_bytes, max_scan)
        )
        return Lines(
            tuple(window["lines"]),
            tuple(window["chars"]),
            window["total_lines"],
            window["complete"],
            window["size"],
        )

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

    def _read(self, path: str, offset: int, limit: int | None) -> bytes:
        with self.resolve(path).open("rb") as handle:
            if limit is None:
                return handle.read()
            handle.seek(offset)
            return handle.read(limit)

    def _read_lines(self, path: str, numbers: tuple[int, int, int, int, int]) -> dict[str, Any]:
        with self.resolve(path).open("rb") as handle:
            return exec_server.read_lines(handle, *numbers)

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
