"""What the host makes of a job's tree: every change staged but repositories
embedded in it and generated files, the commit, its numbers, the push.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import re
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.git.process import (
    LOCAL_TIMEOUT,
    NETWORK_TIMEOUT,
    OFFLINE,
    Auth,
    GitError,
    Result,
    check_branch_name,
    check_url,
    headline,
    run_git,
)
from runner.git.sanitize import prepare, sanitize

__all__ = [
    "GENERATED",
    "Author",
    "DiffStat",
    "FileStat",
    "Staged",
    "commit_all",
    "commit_staged",
    "diffstat",
    "push",
    "stage_all",
]


# Untracked files that are caches and build output, never the change, in
# gitignore syntax: `git add` leaves them out of every commit made here.
GENERATED = (
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    "node_modules/",
    ".venv/",
    ".tox/",
    "*.egg-info/",
    ".DS_Store",
)


_IDENTITY = re.compile(r"[^<>\r\n]+ <[^<>\s]+>")


# No hook, no signing key: the commit is the bot's, made the same way on any host.
_COMMIT = ("commit", "--quiet", "--no-verify", "--no-gpg-sign", "--cleanup=strip")


@dataclass(frozen=True, slots=True)
class Author:
    """Who a commit is by, as git names them: `name <email>`."""

    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


# A trailer git keeps as one: a token of letters, digits and dashes, a value on one line.
_TRAILER_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_TRAILER_VALUE = re.compile(r"[^\x00-\x1f\x7f]+")


@dataclass(frozen=True, slots=True)
class FileStat:
    """One file's share of a diff; a binary file counts no lines."""

    path: str
    insertions: int
    deletions: int
    binary: bool = False
    old_path: str | None = None  # set when the file was renamed from it


@dataclass(frozen=True, slots=True)
class DiffStat:
    files: tuple[FileStat, ...]

    @property
    def files_changed(self) -> int:
        return len(self.files)

    @property
    def insertions(self) -> int:
        return sum(file.insertions for file in self.files)

    @property
    def deletions(self) -> int:
        return sum(file.deletions for file in self.files)


@contextlib.contextmanager
def _generated_excludes() -> Iterator[str]:
    """A file of `GENERATED` patterns outside the tree, for `core.excludesFile`."""
    with tempfile.TemporaryDirectory(prefix="neo-git-") as directory:
        path = os.path.join(directory, "excludes")
        with open(path, "w") as handle:
            handle.write("".join(f"{pattern}\n" for pattern in GENERATED))
        yield path


def _leaving_out(embedded: Sequence[str]) -> bytes:
    # A pathspec that only excludes means "everything else"; from stdin, for any number.
    return b"".join(b":(top,exclude,literal)" + os.fsencode(path) + b"\0" for path in embedded)


async def _add_all(run: Callable[..., Awaitable[Result]], embedded: Sequence[str]) -> None:
    """`git add --all`, but for the `embedded` directories, which git does not look
    into, and untracked generated files."""
    with _generated_excludes() as excludes:
        config = (("core.excludesFile", excludes),)
        if not embedded:
            await run(["add", "--all"], config=config)
            return
        await run(
            ["add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"],
            stdin=_leaving_out(embedded),
            config=config,
        )


async def _untracked(run: Callable[..., Awaitable[Result]], embedded: Sequence[str]) -> list[str]:
    """Untracked files the repository's own ignore rules do not ignore, but in `embedded`."""
    # The embedded repositories are left out by pathspec, as `git add` leaves
    # them: otherwise git reads their `.git`, which may be a FIFO it blocks on.
    excluded = [f":(top,exclude,literal){path}" for path in embedded]
    listed = await run(
        ["ls-files", "-z", "--others", "--exclude-standard", "--", *excluded],
        config=(("core.excludesFile", os.devnull),),
    )
    # git lists an embedded repository as its directory, never what is in it.
    inside = tuple(f"{directory}/" for directory in embedded)
    paths = listed.stdout.decode(errors="surrogateescape").split("\0")
    return [path for path in paths if path and not path.startswith(inside)]


def _generated_kind(path: str) -> str:
    """Which of `GENERATED` left `path` out: its outermost matching directory, else its name."""
    *directories, name = path.split("/")
    for part in directories:
        for pattern in GENERATED:
            if pattern.endswith("/") and fnmatch.fnmatchcase(part, pattern[:-1]):
                return pattern
    for pattern in GENERATED:
        if not pattern.endswith("/") and fnmatch.fnmatchcase(name, pattern):
            return pattern
    return directories[0] + "/" if directories else name


@dataclass(frozen=True, slots=True)
class Staged:
    """What `stage_all` left out of the index."""

    # Directories below the top holding a git repository of their own, sorted.
    embedded: tuple[str, ...] = ()
    # Untracked caches and build output: each kind (a pattern of `GENERATED`)
    # with how many files, in the order of `GENERATED`.
    generated: tuple[tuple[str, int], ...] = ()


async def stage_all(tree: Path, *, timeout: float = LOCAL_TIMEOUT) -> Staged:
    """Stage every change (deletions included) but repositories embedded in the tree
    and untracked generated files; say what was left out.

    A directory holding a `.git` of its own (`git init`, a copied repository,
    a `gitdir:` file) would be staged as a gitlink: a commit no remote has.
    Nothing in it is staged; what the index holds there stays as it was.
    """
    git_dir, embedded = await prepare(tree)

    async def run(
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        config: Sequence[tuple[str, str]] = (),
    ) -> Result:
        return await run_git(
            args,
            what=args[0],
            git_dir=git_dir,
            work_tree=tree,
            config=(*OFFLINE, *config),
            stdin=stdin,
            timeout=timeout,
        )

    await _add_all(run, embedded)
    # Everything else is staged now: what is still untracked, and not ignored
    # by the repository itself, was left out as generated.
    counts: dict[str, int] = {}
    for path in await _untracked(run, embedded):
        kind = _generated_kind(path)
        counts[kind] = counts.get(kind, 0) + 1
    order = {pattern: index for index, pattern in enumerate(GENERATED)}
    generated = sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
    return Staged(embedded, tuple(generated))


async def commit_all(
    tree: Path,
    message: str,
    *,
    author: Author,
    co_authors: Sequence[str] = (),
    trailers: Sequence[tuple[str, str]] = (),
    staged: bool = False,
    timeout: float = LOCAL_TIMEOUT,
) -> str | None:
    """Stage every change (deletions included) and commit it; the new sha, or None.

    The commit is authored and committed by `author` (the bot), with a
    `Co-authored-by: Name <email>` trailer per co-author and the `trailers`
    (token, value) after them, e.g. ("Neo-Run", url). No hook
    runs. Repositories embedded in the tree and untracked generated files are
    left out, as by `stage_all`. `staged`: the caller staged with `stage_all`
    (and may have unstaged since): the index is committed as it is.
    """
    commit = _Commit(tree, message, author, co_authors, trailers, timeout)
    git_dir, embedded = await prepare(tree)
    if not staged:
        await _add_all(functools.partial(commit.run, git_dir), embedded)
    differs = await commit.run(
        git_dir, ["diff", "--cached", "--quiet", "--no-ext-diff"], check=False
    )
    if differs.code == 0:
        return None
    if differs.code != 1:
        raise GitError(f"git diff failed: {headline(differs.stderr)}")
    return await commit.make(git_dir)


async def commit_staged(
    tree: Path,
    message: str,
    *,
    author: Author,
    co_authors: Sequence[str] = (),
    trailers: Sequence[tuple[str, str]] = (),
    timeout: float = LOCAL_TIMEOUT,
) -> str:
    """Commit the index as it is, which the caller knows differs from HEAD (it
    listed what is staged); the new sha. As `commit_all` with `staged`, one git
    process fewer."""
    commit = _Commit(tree, message, author, co_authors, trailers, timeout)
    git_dir, _ = await prepare(tree)
    return await commit.make(git_dir)


@dataclass(frozen=True, slots=True)
class _Commit:
    """A commit about to be made in `tree`, its message and identities checked."""

    tree: Path
    message: str
    author: Author
    co_authors: Sequence[str]
    trailers: Sequence[tuple[str, str]]
    timeout: float

    def __post_init__(self) -> None:
        if not self.message.strip():
            raise GitError("the commit message is empty")
        if not _IDENTITY.fullmatch(str(self.author)):
            raise GitError(
                f"not a valid commit identity: {self.author.name!r} <{self.author.email}>"
            )
        _trailer_args(self.co_authors, self.trailers)  # refused before any git runs

    async def run(
        self,
        git_dir: Path,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        check: bool = True,
        config: Sequence[tuple[str, str]] = (),
    ) -> Result:
        return await run_git(
            args,
            what=args[0],
            git_dir=git_dir,
            work_tree=self.tree,
            config=(*OFFLINE, *config),
            env=env,
            stdin=stdin,
            timeout=self.timeout,
            check=check,
        )

    async def make(self, git_dir: Path) -> str:
        """Commit the index; the new sha."""
        author = self.author
        identity = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email}
        identity |= {"GIT_COMMITTER_NAME": author.name, "GIT_COMMITTER_EMAIL": author.email}
        trailer_args = _trailer_args(self.co_authors, self.trailers)
        await self.run(git_dir, [*_COMMIT, "--message", self.message, *trailer_args], env=identity)
        return (await self.run(git_dir, ["rev-parse", "HEAD"])).text


def _trailer_args(co_authors: Sequence[str], trailers: Sequence[tuple[str, str]]) -> list[str]:
    """git commit's `--trailer` arguments: a co-author's each, then the `trailers`;
    GitError for one that is not a single well-formed line."""
    args: list[str] = []
    for co_author in dict.fromkeys(co_authors):
        if not _IDENTITY.fullmatch(co_author):
            raise GitError(f"not a valid co-author (Name <email>): {co_author!r}")
        args += ["--trailer", f"Co-authored-by: {co_author}"]
    for token, value in trailers:
        if not _TRAILER_TOKEN.fullmatch(token) or not _TRAILER_VALUE.fullmatch(value):
            raise GitError(f"not a valid trailer: {token!r}: {value!r}")
        args += ["--trailer", f"{token}: {value}"]
    return args


def _parse_numstat(output: bytes) -> tuple[FileStat, ...]:
    """`git diff --numstat -z` output as FileStats."""
    fields = output.decode(errors="surrogateescape").split("\0")
    files: list[FileStat] = []
    i = 0
    while i < len(fields) and fields[i]:
        added, deleted, path = fields[i].split("\t", 2)
        old_path = None
        if not path:  # a rename: the old and the new path follow
            old_path, path = fields[i + 1], fields[i + 2]
            i += 2
        i += 1
        binary = added == "-"
        insertions, deletions = (0, 0) if binary else (int(added), int(deleted))
        files.append(FileStat(path, insertions, deletions, binary, old_path))
    return tuple(files)


async def diffstat(
    tree: Path,
    base: str,
    *,
    head: str = "HEAD",
    fork_point: bool = False,
    timeout: float = LOCAL_TIMEOUT,
) -> DiffStat:
    """What the commits from `base` to `head` changed, file by file; with
    `fork_point`, from where `head` left `base` (their merge base, as GitHub
    shows a pull request's diff: GitError when they share no history)."""
    git_dir = await sanitize(tree)
    revisions = [f"{base}...{head}"] if fork_point else [base, head]
    result = await run_git(
        [
            "diff",
            "--numstat",
            "-z",
            "--find-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--end-of-options",
            *revisions,
        ],
        what="diff",
        git_dir=git_dir,
        work_tree=tree,
        config=OFFLINE,
        timeout=timeout,
    )
    return DiffStat(_parse_numstat(result.stdout))


async def push(
    tree: Path,
    branch: str,
    *,
    url: str,
    token: str,
    force: bool = False,
    timeout: float = NETWORK_TIMEOUT,
) -> None:
    """Push local `branch` to the branch of the same name at `url`."""
    url = check_url(url)
    await check_branch_name(branch)
    git_dir = await sanitize(tree)
    refspec = f"{'+' if force else ''}refs/heads/{branch}:refs/heads/{branch}"
    await run_git(
        ["push", "--quiet", "--no-verify", "--", url, refspec],
        what="push",
        git_dir=git_dir,
        work_tree=tree,
        config=OFFLINE,
        auth=Auth(url, token),
        timeout=timeout,
    )
