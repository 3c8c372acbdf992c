"""The plug point tools act through: a working tree and a way to run commands in it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from runner.errors import NeoError


@dataclass(frozen=True, slots=True)
class ExecResult:
    exit_code: int
    # stdout and stderr interleaved as the command wrote them.
    output: bytes
    timed_out: bool = False
    # Set when `output` keeps only the head and tail of a longer output
    # (see `OutputBuffer`): the full output's size.
    total_bytes: int | None = None
    total_lines: int | None = None
    # Processes the command left running, holding its output, that were
    # stopped when it ended: how many, and the command lines of the first few.
    stopped_count: int = 0
    stopped: tuple[str, ...] = ()


def stopped_of(answer: Mapping[str, object]) -> tuple[int, tuple[str, ...]]:
    """`stopped_count` and `stopped` from the exec agent's answer to `run`."""
    names = answer.get("stopped") or []
    if not isinstance(names, list):
        raise TypeError("not a list")
    count = answer.get("stopped_count", len(names))
    if not isinstance(count, int):
        raise TypeError("not an integer")
    return count, tuple(str(name) for name in names)


@dataclass(frozen=True, slots=True)
class BackgroundOutput:
    """What a background command printed since it was last read, and whether it ended."""

    output: bytes
    # None while the command runs.
    exit_code: int | None
    # Earlier unread bytes not kept: the sandbox keeps the newest 1 MiB.
    dropped: int = 0


def background_of(answer: Mapping[str, object], output: bytes) -> BackgroundOutput:
    """A BackgroundOutput from the exec agent's answer, its output decoded."""
    code, dropped = answer.get("exit_code"), answer.get("dropped", 0)
    if not (code is None or isinstance(code, int)) or not isinstance(dropped, int):
        raise TypeError("not an integer")
    return BackgroundOutput(output, code, dropped)


@dataclass(frozen=True, slots=True)
class Lines:
    """A window of a file's lines, read without holding the file (`Sandbox.read_lines`)."""

    # Each line without its `\n` (or `\r\n`), cut at `max_line_bytes`.
    lines: tuple[bytes, ...]
    # Each line's full length in characters (UTF-8), however much was kept.
    chars: tuple[int, ...]
    # The file's lines: all of them when `complete`, else those scanned.
    total_lines: int
    complete: bool
    size: int


# Set in every command's environment, in both sandboxes (the setup commands'
# too): no bytecode written into the tree, where it would reach the pull
# request, and no pager or progress bar waiting on a terminal there is not.
COMMAND_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
    "CI": "1",
}


class SandboxError(NeoError):
    """The sandbox itself failed (not the command run inside it)."""

    kind: ClassVar[str] = "sandbox_error"


class PathOutsideTree(SandboxError):
    """A path resolves outside the working tree; tools report it to the model."""


class UnknownBackground(LookupError):
    """No background command has that id: never started, or stopped."""


class Sandbox(Protocol):
    """Where tools act.

    Paths are relative to `root`, or absolute paths inside it; anything that
    resolves outside the tree (`..`, absolute paths elsewhere, symlinks out)
    raises `PathOutsideTree`.
    """

    @property
    def root(self) -> str:
        """The working tree's absolute path, as commands inside see it."""
        ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` in the tree (or `cwd` inside it); kill its whole process
        group after `timeout` seconds and report `timed_out`."""
        ...

    async def start_background(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """Start `argv` in the background, in its own process group, as `run`
        would; its id. It runs until `stop_background` or the sandbox closes."""
        ...

    async def background_output(self, ident: str) -> BackgroundOutput:
        """What background command `ident` printed since the last call, and its
        exit code once it has exited. Raises UnknownBackground."""
        ...

    async def stop_background(self, ident: str) -> BackgroundOutput:
        """Kill background command `ident`'s process group and forget it; what
        it printed since the last read. Raises UnknownBackground."""
        ...

    async def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        """Up to `limit` bytes of the file from byte `offset`; without a limit,
        the whole file. Raises FileNotFoundError, IsADirectoryError."""
        ...

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
        """Lines `start` .. `start + count - 1` (1-based), each cut at
        `max_line_bytes`, stopping once `max_bytes` are kept; the file's lines
        are counted up to `max_scan` bytes into it. Memory: the window and a
        chunk, whatever the file's size. Raises as `read`."""
        ...

    async def write(self, path: str, data: bytes) -> None:
        """Replace the file's content, creating missing parent directories."""
        ...
