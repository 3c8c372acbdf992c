"""File handling the tools share: sandbox failures as messages, text decoding,
and search roots for the ripgrep-backed tools."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from runner.sandbox.base import ExecResult, PathOutsideTree, Sandbox
from runner.tools.base import ToolError

# A NUL byte this early means a binary file, as git and ripgrep also judge.
BINARY_PROBE_BYTES = 8192

# The ripgrep-backed tools end a search that takes longer than this.
SEARCH_TIMEOUT_SECONDS = 60.0

# How grep and glob walk the tree: hidden files count (.github/ holds
# workflows), .gitignore applies even in a tree that is not a git checkout,
# and NOT_GIT, as the last glob (later globs win), keeps the git database out.
WALK_FLAGS = ("--no-config", "--color=never", "--sort=path", "--hidden", "--no-require-git")
NOT_GIT = "--glob=!.git"


def path_error(path: str, error: Exception) -> ToolError:
    """A sandbox or OS failure on `path` as the one line the model reads."""
    if isinstance(error, PathOutsideTree):
        return ToolError(str(error))
    if isinstance(error, FileNotFoundError):
        return ToolError(f"{path} does not exist")
    if isinstance(error, IsADirectoryError):
        return ToolError(f"{path} is a directory")
    if isinstance(error, NotADirectoryError):
        return ToolError(f"{path}: a parent of it is not a directory")
    if isinstance(error, PermissionError):
        return ToolError(f"{path}: permission denied")
    if isinstance(error, OSError) and error.strerror:
        return ToolError(f"{path}: {error.strerror}")
    return ToolError(f"{path}: {error}")


def decode_text(data: bytes) -> str | None:
    """`data` as text, or None for a binary file (a NUL byte early on, or not UTF-8)."""
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line needs no newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def cap_lines(lines: list[str], limit: int, unit: str, advice: str) -> str:
    """The first `limit` lines, and a note saying how many were left out."""
    text = "\n".join(lines[:limit])
    omitted = len(lines) - limit
    if omitted > 0:
        text += f"\n({plural(omitted, 'more ' + unit)} not shown; {advice})"
    return text


@dataclass(frozen=True, slots=True)
class SearchRoot:
    """Where a ripgrep search runs: in `cwd` over `target`, whose output paths
    start with `target` and are shown starting with `prefix` instead."""

    cwd: str | None
    target: str
    prefix: str

    def shown(self, line: str) -> str:
        """An output line of ripgrep with its path relative to the tree."""
        if self.prefix and line.startswith("./"):
            return self.prefix + line[1:]
        return line.removeprefix("./")


def tree_relative(path: str, root: str) -> str:
    """`path` normalised, and relative to `root` when it is an absolute path inside it."""
    normal = posixpath.normpath(path or ".")
    if posixpath.isabs(normal):
        inside = posixpath.relpath(normal, root)
        if not inside.startswith(".."):
            return inside
    return normal


async def search_root(sandbox: Sandbox, path: str, *, files_allowed: bool) -> SearchRoot:
    """Where to run ripgrep to search `path`, checked to lie inside the tree.

    A directory becomes the command's working directory, so the sandbox checks
    it and glob filters are relative to it. ripgrep follows a symlink named on
    its command line, so a file is checked by opening it first (reading none
    of it: it may be huge).
    """
    relative = tree_relative(path, sandbox.root)
    if relative == ".":
        return SearchRoot(None, ".", "")
    try:
        await sandbox.read(relative, limit=0)
    except IsADirectoryError:
        return SearchRoot(relative, ".", relative)
    except (PathOutsideTree, OSError) as error:
        raise path_error(path, error) from None
    if not files_allowed:
        raise ToolError(f"{path} is a file, not a directory")
    return SearchRoot(None, relative, "")


async def run_search(sandbox: Sandbox, argv: list[str], root: SearchRoot) -> ExecResult:
    """Run ripgrep's `argv` in `root`; a timeout or a missing `rg` is a ToolError."""
    try:
        result = await sandbox.run(argv, timeout=SEARCH_TIMEOUT_SECONDS, cwd=root.cwd)
    except (PathOutsideTree, OSError) as error:
        raise path_error(root.cwd or ".", error) from None
    if result.timed_out:
        raise ToolError(
            f"search timed out after {SEARCH_TIMEOUT_SECONDS:g}s; narrow the path or pattern"
        )
    if result.exit_code == 127:
        raise ToolError("rg (ripgrep) is not installed in the sandbox")
    return result
