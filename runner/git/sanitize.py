"""A working tree treated as hostile before git runs in it (the agent wrote it).

The git directory may hold only what git itself writes, as regular files;
its config is rewritten from an allow-list; no file git reads while it walks
the tree may block it; a repository embedded in the tree is found, to be
left out of the commit. docs/architecture.md, "Host git", gives each reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import re
import stat
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from runner.git.process import GitError, run_git

__all__ = ["prepare", "sanitize", "trusting"]


# Keys a tree's .git/config keeps when it is rewritten (lower case, as `git
# config --list` prints them); `branch.<name>.remote|merge` stay too.
_KEPT_KEYS = frozenset(
    {
        *("core.filemode", "core.logallrefupdates", "core.symlinks", "core.ignorecase"),
        *("core.precomposeunicode", "extensions.objectformat", "user.name", "user.email"),
    }
)


_BRANCH_KEY = re.compile(r"branch\..+\.(remote|merge)")


# Files in a git directory that git reads at start and must be regular files.
_REGULAR = ("HEAD", "config", "index", "packed-refs")


# Files in the working tree that git opens and reads while it walks it.
_READ_IN_TREE = frozenset({".gitignore", ".gitattributes", ".gitmodules"})


# Files in a git directory that make git read objects or config from elsewhere.
_FOREIGN = (
    "config.worktree",
    "commondir",
    "objects/info/alternates",
    "objects/info/http-alternates",
)


def _git_dir(tree: Path) -> Path:
    """`tree`'s git directory; raise GitError unless it is a real directory in it."""
    git_dir = tree / ".git"
    try:
        mode = git_dir.lstat().st_mode
    except FileNotFoundError:
        raise GitError(f"not a git working tree: {tree}") from None
    if not stat.S_ISDIR(mode):
        raise GitError(f"not a git working tree (.git is not a directory): {tree}")
    return git_dir


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _config_text(entries: Sequence[tuple[str, str]]) -> str:
    """A git config file holding `entries` (dotted keys), grouped by section."""
    sections: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        sections.setdefault((section, subsection), []).append((name, value))
    lines: list[str] = []
    for (section, subsection), items in sections.items():
        lines.append(f"[{section} {_quote(subsection)}]" if subsection else f"[{section}]")
        lines += [f"\t{name} = {_quote(value)}" for name, value in items]
    return "\n".join(lines) + "\n"


def _kind(mode: int) -> str | None:
    """What a file that is neither regular nor a directory is, for a message; else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _check_git_dir(git_dir: Path) -> None:
    """Refuse what in `git_dir` would lead git out of the tree or block it, and
    remove the files that point git at other object stores or configs.

    A symbolic link is followed out of the tree; a FIFO (or socket, or device)
    blocks the git process that opens it until its timeout; the files git
    reads first must be regular files. All are refused before git runs.
    """
    for name in _REGULAR:
        try:
            mode = (git_dir / name).lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            what = _kind(mode) or "a directory"
            raise GitError(f"refusing a working tree whose .git/{name} is {what}")
    for directory, dirs, files in os.walk(git_dir):
        for name in (*dirs, *files):
            path = os.path.join(directory, name)
            found = _kind(os.lstat(path).st_mode)
            if found is not None:
                where = os.path.relpath(path, git_dir.parent)
                raise GitError(f"refusing a working tree whose {where} is {found}")
    for name in _FOREIGN:
        with contextlib.suppress(FileNotFoundError):
            (git_dir / name).unlink()


def _is_git_name(name: str) -> bool:
    # git takes `.git` in any case for a git directory (core.protectNTFS).
    return name.lower() == ".git"


def _check_work_tree(tree: Path) -> tuple[str, ...]:
    """Refuse the files git would block on in `tree` (outside its .git); return the
    directories below the top that hold a `.git` of their own, sorted.

    git opens every .gitignore and .gitattributes on its way: a FIFO there
    blocks it. A directory holding a `.git` (a `git init`, a copied repository,
    a `gitdir:` file pointing anywhere) is not looked into: git is told to
    leave it alone (`_add_all`), so what is in it is never read.
    """
    embedded: list[str] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(tree / relative) as listing:
                entries = list(listing)
        except OSError:
            continue  # git cannot read it either, and skips it
        if relative and any(_is_git_name(entry.name) for entry in entries):
            embedded.append(relative)
            continue
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            if path == ".git":
                continue  # checked by _check_git_dir
            if entry.is_dir(follow_symlinks=False):
                pending.append(path)
            elif entry.name in _READ_IN_TREE:
                # Through a link too: an older git follows it, and stat opens nothing.
                with contextlib.suppress(OSError):
                    kind = _kind(os.stat(tree / path).st_mode)
                    if kind is not None:
                        raise GitError(f"refusing a working tree whose {path} is {kind}")
    return tuple(sorted(embedded))


def _replace(path: Path, text: str) -> None:
    """Write `path` atomically, owned like its directory (the sandbox user may own it)."""
    temp = path.with_name(f"{path.name}.neo-tmp")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    with contextlib.suppress(OSError):
        owner = path.parent.stat()
        os.chown(temp, owner.st_uid, owner.st_gid)
    os.replace(temp, path)


# The trees whose check stands for the rest of a `trusting` block, by path
# as given (another spelling of the same tree is checked again).
_trusted: contextvars.ContextVar[Mapping[str, tuple[Path, tuple[str, ...]]]] = (
    contextvars.ContextVar("trusted", default=MappingProxyType({}))
)


@contextlib.asynccontextmanager
async def trusting(tree: Path) -> AsyncIterator[Path]:
    """Check `tree` once (`prepare`), and let every git call of this block on it
    take that check for its own; its git directory.

    Each call checks the tree again because the agent may have written it
    since: a config, a FIFO, a repository inside it. Only where nothing but
    this host's own git writes the tree (its sandbox gone, say, while the
    host commits and pushes) may a block trust it: there each check costs a
    git process, a config rewritten and a walk of the whole tree, and the
    publishing of a job made eight of them.
    """
    prepared = await prepare(tree)
    token = _trusted.set({**_trusted.get(), str(tree): prepared})
    try:
        yield prepared[0]
    finally:
        _trusted.reset(token)


async def sanitize(tree: Path, *, origin: str | None = None, branch: str | None = None) -> Path:
    """Check `tree` and rewrite its .git/config to the allow-listed keys; its git directory.

    `origin`, a URL the caller trusts, replaces the remote's; `branch` gets
    origin's branch of that name as its upstream.
    """
    git_dir, _ = await prepare(tree, origin=origin, branch=branch)
    return git_dir


async def prepare(
    tree: Path, *, origin: str | None = None, branch: str | None = None
) -> tuple[Path, tuple[str, ...]]:
    """`sanitize`, and the directories of repositories embedded in `tree`."""
    if origin is None and branch is None:
        checked = _trusted.get().get(str(tree))
        if checked is not None:
            return checked  # within `trusting`: no one else has written the tree
    git_dir = _git_dir(tree)
    await asyncio.to_thread(_check_git_dir, git_dir)
    embedded = await asyncio.to_thread(_check_work_tree, tree)
    config = git_dir / "config"
    # `--file` reads no include; a crafted file is only ever parsed, never obeyed.
    listed = await run_git(
        ["config", "--file", str(config), "--null", "--list"], what="config", check=False
    )
    existing = [
        (key, value)
        for key, _, value in (
            item.partition("\n") for item in listed.stdout.decode(errors="replace").split("\0")
        )
        if key and "\n" not in value
    ]
    entries = [("core.repositoryformatversion", "0"), ("core.bare", "false")]
    entries += [(k, v) for k, v in existing if k in _KEPT_KEYS or _BRANCH_KEY.fullmatch(k)]
    if any(key == "extensions.objectformat" for key, _ in entries):
        entries[0] = ("core.repositoryformatversion", "1")
    url = origin or next((v for k, v in existing if k == "remote.origin.url"), None)
    if url is not None:
        entries += [
            ("remote.origin.url", url),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("remote.origin.promisor", "true"),
            ("remote.origin.partialclonefilter", "blob:none"),
        ]
    if branch is not None:
        entries = [(k, v) for k, v in entries if not k.startswith(f"branch.{branch}.")]
        entries += [(f"branch.{branch}.remote", "origin")]
        entries += [(f"branch.{branch}.merge", f"refs/heads/{branch}")]
    await asyncio.to_thread(_replace, config, _config_text(entries))
    return git_dir, embedded
