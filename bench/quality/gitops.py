"""Host-side git for the benchmark: checking a task's bundle out, applying its patches.

Every command is an argv list with a timeout, without hooks or the user's
configuration, so that a task's repository runs nothing on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from runner.text import one_line

__all__ = [
    "IDENTITY",
    "BenchGitError",
    "apply_patch",
    "checkout_bundle",
    "git",
    "patch_paths",
    "restore_paths",
]

TIMEOUT = 120.0
# Who the benchmark's own commits are by, with a fixed date so a bundle built
# twice from the same tree is the same bundle.
IDENTITY = {
    "GIT_AUTHOR_NAME": "Neo benchmark",
    "GIT_AUTHOR_EMAIL": "bench@neo.invalid",
    "GIT_COMMITTER_NAME": "Neo benchmark",
    "GIT_COMMITTER_EMAIL": "bench@neo.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
_DIFF_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)


class BenchGitError(Exception):
    """A git step failed; one line."""


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    env.update(extra or {})
    return env


async def git(
    *args: str,
    cwd: Path,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> bytes:
    """`git args` in `cwd`; its stdout, or BenchGitError with git's first line of complaint."""
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never", *args]
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=_env(env),
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(input), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise BenchGitError(f"git {args[0]} timed out after {timeout:g}s") from None
    if process.returncode != 0:
        why = err.decode(errors="replace").strip() or f"exit code {process.returncode}"
        raise BenchGitError(f"git {args[0]}: {one_line(why)}")
    return out


async def checkout_bundle(bundle: Path, dest: Path, *, branch: str = "main") -> str:
    """`dest` as a clone of `bundle` on `branch`; the commit it is at."""
    source, dest = await asyncio.to_thread(lambda: (bundle.resolve(), dest.resolve()))
    await git("clone", "--quiet", "--branch", branch, str(source), str(dest), cwd=dest.parent)
    return (await git("rev-parse", "HEAD", cwd=dest)).decode().strip()


async def apply_patch(tree: Path, patch: bytes, *, what: str) -> None:
    """Apply `patch` to `tree`'s files; BenchGitError naming `what` when it does not apply."""
    try:
        await git("apply", "--whitespace=nowarn", "-", cwd=tree, input=patch)
    except BenchGitError as error:
        raise BenchGitError(f"{what} does not apply: {error}") from None


def patch_paths(patch: bytes) -> list[str]:
    """The paths a git diff touches, before and after, in order."""
    seen: dict[str, None] = {}
    for match in _DIFF_HEADER.finditer(patch):
        for raw in match.groups():
            seen[os.fsdecode(raw)] = None
    return list(seen)


async def restore_paths(tree: Path, base: str, paths: Sequence[str]) -> None:
    """Put `paths` back as they are at `base`, removing those `base` does not have.

    The hidden tests then apply to the files they were written against, whatever
    the agent did to them (SWE-bench resets the test files the same way).
    """
    listed = await git("ls-tree", "-r", "-z", "--name-only", base, "--", *paths, cwd=tree)
    present = {os.fsdecode(name) for name in listed.split(b"\0") if name}
    await asyncio.to_thread(_remove_absent, tree, present, paths)
    kept = [path for path in paths if path in present]
    if kept:
        await git("checkout", base, "--", *kept, cwd=tree)


def _remove_absent(tree: Path, present: set[str], paths: Sequence[str]) -> None:
    """Remove each of `paths` not in `present`; BenchGitError for a path outside `tree`."""
    root = os.path.realpath(tree)
    for path in paths:
        target = os.path.realpath(tree / path)
        if os.path.commonpath([root, target]) != root:
            raise BenchGitError(f"a patch names a path outside the tree: {path!r}")
        if path not in present and (os.path.isfile(tree / path) or os.path.islink(tree / path)):
            os.unlink(tree / path)
