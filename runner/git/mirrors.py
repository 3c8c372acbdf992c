"""The mirror cache: per repository URL, a blob-less mirror under a lock, and a
spare tree checked out ahead so the next job's clone is a rename.

docs/architecture.md, "Host git", gives the mirror and spare-tree strategy.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from runner.git.process import LOCAL_TIMEOUT, OFFLINE, Auth, GitError, check_url, run_git, scrub
from runner.git.sanitize import sanitize

__all__ = [
    "RACY_GIT_SECONDS",
    "RECENT_COMMITS",
    "STALE_STAGING_SECONDS",
    "MirrorCache",
    "clone_mirror",
    "default_branch",
    "fetch_recent_blobs",
    "prune_branches",
    "resolve",
]

log = logging.getLogger("neo.git")


# Commits back from the checked-out one whose blobs are fetched, so `git log
# -p`, `git show` and `git diff HEAD~N` work offline for recent history.
RECENT_COMMITS = 20


# git compares file and index times in whole seconds: wait this long after a
# checkout before refreshing its index (see `_make_spare`).
RACY_GIT_SECONDS = 1.1


# A spare's staging directory this old was left by a process that died.
STALE_STAGING_SECONDS = 3600.0


# How often a job waiting for another job's mirror lock looks again.
_LOCK_POLL_SECONDS = 0.02


# What a mirror's incremental fetch takes: new commits with their blobs, bar big ones.
_NEW_BLOBS = "--filter=blob:limit=1m"


# Fetches into a mirror keep their packs, which trees copy as whole files.
_KEEP_PACKS = (("fetch.unpackLimit", "1"), ("transfer.unpackLimit", "1"))


_LOCAL_CLONE = (("protocol.file.allow", "always"),)


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class MirrorCache:
    """Per repository URL under `root`: a blob-less mirror, its lock, and a spare tree.

    Use it as an async context manager (or call `aclose`) so spare trees
    being made in the background are finished or cancelled. `spare_ready`,
    if given, runs on each spare tree (in a thread) once it is checked out
    and before git records its files' stat data: what else makes it ready
    for the jobs that take it (the worker's: the docker sandbox's user gets
    it ahead of time). An OSError it raises costs the spare, not a job.
    """

    def __init__(
        self,
        root: Path,
        *,
        spare_trees: bool = True,
        spare_ready: Callable[[Path], None] | None = None,
    ) -> None:
        self.root = root
        self.spare_trees = spare_trees
        self._spare_ready = spare_ready
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> MirrorCache:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def path(self, url: str) -> Path:
        """Where the mirror of `url` lives: a readable slug and a hash of the URL."""
        url = check_url(url)
        digest = hashlib.sha256(url.encode()).hexdigest()[:20]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", urlsplit(url).path.strip("/"))[-60:]
        return self.root / f"{slug.strip('.-') or 'repo'}-{digest}.git"

    def spare_path(self, url: str) -> Path:
        """Where the ready working tree of `url` waits for the next clone."""
        return self.path(url).with_suffix(".spare")

    @contextlib.asynccontextmanager
    async def locked(self, url: str) -> AsyncIterator[Path]:
        """Hold the mirror of `url` exclusively; yield its path (it may not exist yet)."""
        mirror = self.path(url)
        await asyncio.to_thread(self.root.mkdir, mode=0o700, parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        fd = os.open(mirror.with_suffix(".lock"), flags, 0o600)
        try:
            # Polled rather than blocking in a thread, so a cancelled job stops waiting.
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(_LOCK_POLL_SECONDS)
            yield mirror
        finally:
            os.close(fd)  # releases the lock

    async def wait_idle(self) -> None:
        """Wait until no spare tree is being made."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel the spare trees being made and wait for them to stop."""
        for task in self._tasks:
            task.cancel()
        await self.wait_idle()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def replenish(self, url: str, commit: str) -> None:
        if self.spare_trees:
            self._spawn(self._make_spare(url, commit))

    async def _make_spare(self, url: str, commit: str) -> None:
        """Check out `commit` (whose blobs the mirror holds) as the spare tree of `url`."""
        spare = self.spare_path(url)
        # Each maker stages apart: another process may be making one too.
        staging = spare.with_name(f"{spare.name}.tmp-{secrets.token_hex(4)}")
        try:
            async with self.locked(url) as mirror:
                await asyncio.to_thread(_remove_stale_staging, spare)
                if await asyncio.to_thread(spare.exists):
                    return
                await clone_mirror(mirror, staging, LOCAL_TIMEOUT)
            git_dir = await sanitize(staging, origin=url)
            # Outside the lock, at a low priority: the jobs under way come first.
            await run_git(
                ["checkout", "--quiet", "--detach", commit],
                what="checkout",
                git_dir=git_dir,
                work_tree=staging,
                config=OFFLINE,
                background=True,
            )
            await prune_branches(git_dir, keep=None)
            if self._spare_ready is not None:
                await asyncio.to_thread(self._spare_ready, staging)
            # What `spare_ready` changed of the files (a chown changes every
            # ctime) recorded before the spare is offered: a job that takes it
            # then reads again only the files written in this very second.
            await _refresh(git_dir, staging, background=True)
            async with self.locked(url):
                if await asyncio.to_thread(spare.exists):
                    return
                # Offered at once: a job that comes before the refresh below
                # reads again the files written in the second of the one above,
                # where without a spare it would clone.
                await asyncio.to_thread(staging.rename, spare)
                made = await asyncio.to_thread(_inode, spare)
            # Files written in the same second as the index are "racily
            # clean": the next checkout would re-read every one of them. A
            # refresh once the clock has moved on records them as clean,
            # under the lock, as no job takes the spare meanwhile (a job's
            # clone may wait for it: not niced).
            await asyncio.sleep(RACY_GIT_SECONDS)
            async with self.locked(url):
                if await asyncio.to_thread(_inode, spare) == made:
                    await _refresh(spare / ".git", spare, background=False)
        except (GitError, OSError) as error:
            log.warning("no spare tree for %s: %s", scrub(url), error)
        finally:
            await asyncio.to_thread(_remove_tree, staging)

    async def update(self, mirror: Path, auth: Auth, timeout: float) -> None:
        """Create the mirror of `auth.url`, or fetch what changed; under its lock."""
        if await asyncio.to_thread((mirror / "HEAD").is_file):
            # New commits bring their new blobs (bar big ones) in the same
            # round trip: the next clone wants them, and old ones stay out.
            await run_git(
                ["fetch", "--quiet", "--prune", "--no-write-fetch-head", _NEW_BLOBS, "origin"],
                what="fetch",
                git_dir=mirror,
                config=_KEEP_PACKS,
                auth=auth,
                timeout=timeout,
            )
            return
        # Built aside and renamed, so a crash never leaves a half-made mirror.
        staging = mirror.with_suffix(".git-tmp")
        await asyncio.to_thread(_remove_tree, staging)
        try:
            # --bare takes branches and tags, not GitHub's refs/pull/*: a busy
            # repository has thousands, and a job fetches the one it needs.
            await run_git(
                ["clone", "--quiet", "--bare", "--filter=blob:none", "--", auth.url, str(staging)],
                what="clone",
                auth=auth,
                timeout=timeout,
            )
            for refspec in ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"):
                args = ["config", "--add", "remote.origin.fetch", refspec]
                await run_git(args, what="config", git_dir=staging)
            await asyncio.to_thread(staging.rename, mirror)
        finally:
            await asyncio.to_thread(_remove_tree, staging)

    async def take_spare(self, mirror: Path, url: str, dest: Path) -> bool:
        """Move the spare tree of `url` to `dest` with the mirror's new objects and refs.

        The caller holds the lock. False when there is no spare to take.
        """
        spare = self.spare_path(url)
        if not self.spare_trees or not await asyncio.to_thread(_movable, spare, dest):
            return False
        await asyncio.to_thread(_move, spare, dest)
        # Independent: the new objects copied while both sides' refs are listed.
        _, heads, present = await asyncio.gather(
            asyncio.to_thread(_copy_objects, mirror / "objects", dest / ".git" / "objects"),
            _refs(mirror, "refs/heads/", "refs/tags/"),
            _refs(dest / ".git", "refs/remotes/origin/", "refs/tags/"),
        )
        wanted = {
            name.replace("refs/heads/", "refs/remotes/origin/", 1): sha
            for name, sha in heads.items()
        }
        present.pop("refs/remotes/origin/HEAD", None)
        commands = [f"update {name} {sha}\n" for name, sha in wanted.items()]
        commands += [f"delete {name}\n" for name in present.keys() - wanted.keys()]
        await run_git(
            ["update-ref", "--stdin"],
            what="update-ref",
            git_dir=dest / ".git",
            stdin="".join(commands).encode(),
        )
        await asyncio.to_thread(_point_origin_head, mirror, dest / ".git", wanted)
        return True


async def clone_mirror(mirror: Path, dest: Path, timeout: float) -> None:
    """Copy (never hard-link) the mirror's objects and refs into a new tree at `dest`."""
    await run_git(
        [
            "clone",
            "--quiet",
            "--local",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            str(mirror),
            str(dest),
        ],
        what="clone",
        config=_LOCAL_CLONE,
        timeout=timeout,
    )


async def _refresh(git_dir: Path, tree: Path, *, background: bool) -> None:
    """Record the stat data of `tree`'s files that git finds changed but whose content is not."""
    await run_git(
        ["update-index", "-q", "--refresh"],
        what="update-index",
        git_dir=git_dir,
        work_tree=tree,
        config=OFFLINE,
        check=False,
        background=background,
    )


def _inode(path: Path) -> int | None:
    """The inode of directory `path`, which tells one spare tree from a later one; None if gone."""
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _remove_stale_staging(spare: Path) -> None:
    """Remove the half-made spares of `spare` that a killed process left behind.

    A spare is staged apart and renamed in within seconds to minutes; one
    untouched for longer than STALE_STAGING_SECONDS belongs to nobody.
    """
    cutoff = time.time() - STALE_STAGING_SECONDS
    for staging in spare.parent.glob(f"{spare.name}.tmp-*"):
        with contextlib.suppress(OSError):
            if staging.stat().st_mtime < cutoff:
                _remove_tree(staging)


def _movable(spare: Path, dest: Path) -> bool:
    """Whether `spare` exists and a rename can carry it to `dest`."""
    if not spare.is_dir() or not dest.parent.is_dir():
        return False
    return spare.stat().st_dev == dest.parent.stat().st_dev


def _move(spare: Path, dest: Path) -> None:
    if dest.exists():
        dest.rmdir()  # empty, checked by the caller
    spare.rename(dest)


def _point_origin_head(mirror: Path, git_dir: Path, refs: Mapping[str, str]) -> None:
    """Point refs/remotes/origin/HEAD at the mirror's default branch, as a clone does.

    A symbolic ref is always a loose file holding `ref: <target>`.
    """
    target = (mirror / "HEAD").read_text().strip().removeprefix("ref: ")
    target = target.replace("refs/heads/", "refs/remotes/origin/", 1)
    symref = git_dir / "refs" / "remotes" / "origin" / "HEAD"
    if target in refs:
        symref.parent.mkdir(parents=True, exist_ok=True)
        symref.write_text(f"ref: {target}\n")
    else:
        symref.unlink(missing_ok=True)


def _copy_objects(source: Path, target: Path) -> None:
    """Copy the object files `target` lacks from `source`; index files last.

    Packs and loose objects are immutable and named by their content, so a
    file of the same name is the same file.
    """
    pending: list[tuple[Path, Path]] = []
    for directory in source.iterdir():
        if directory.name == "pack" or re.fullmatch(r"[0-9a-f]{2}", directory.name):
            for file in directory.iterdir():
                # Packs and their companions; not .keep locks or a multi-pack index.
                wanted = directory.name != "pack" or file.name.startswith("pack-")
                if wanted and not file.name.endswith(".keep") and file.is_file():
                    pending.append((file, target / directory.name / file.name))
    # git finds a pack by its .idx: it appears only once its .pack is whole.
    pending.sort(key=lambda pair: pair[0].suffix == ".idx")
    for file, copy in pending:
        if not copy.exists():
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(file, copy)


async def _refs(git_dir: Path, *prefixes: str) -> dict[str, str]:
    listed = await run_git(
        ["for-each-ref", "--format=%(refname) %(objectname)", *prefixes],
        what="for-each-ref",
        git_dir=git_dir,
    )
    return dict(line.split(" ", 1) for line in listed.text.splitlines() if line)


async def prune_branches(git_dir: Path, keep: str | None) -> None:
    """Delete every local branch but `keep`: a tree starts with the one it is on."""
    branches = await _refs(git_dir, "refs/heads/")
    doomed = [name for name in branches if name != f"refs/heads/{keep}"]
    if doomed:
        commands = "".join(f"delete {name}\n" for name in doomed)
        stdin = commands.encode()
        await run_git(["update-ref", "--stdin"], what="update-ref", git_dir=git_dir, stdin=stdin)


async def default_branch(mirror: Path, auth: Auth, timeout: float) -> str:
    """The repository's default branch: the mirror's HEAD, asked again once it dangles.

    The mirror learns it when it is created; a renamed default branch is
    pruned by the next fetch, and then the server is asked. (A job that knows
    the branch from its webhook passes it as `ref` instead.)
    """
    head = await run_git(["symbolic-ref", "HEAD"], what="symbolic-ref", git_dir=mirror)
    exists = await run_git(
        ["rev-parse", "--verify", "--quiet", head.text],
        what="rev-parse",
        git_dir=mirror,
        check=False,
    )
    if exists.code == 0:
        return head.text.removeprefix("refs/heads/")
    listed = await run_git(
        ["ls-remote", "--symref", "origin", "HEAD"],
        what="ls-remote",
        git_dir=mirror,
        auth=auth,
        timeout=timeout,
    )
    match = re.search(r"^ref: (refs/heads/\S+)\tHEAD$", listed.text, re.MULTILINE)
    if match is None:
        raise GitError("git ls-remote failed: the repository has no default branch")
    await run_git(["symbolic-ref", "HEAD", match.group(1)], what="symbolic-ref", git_dir=mirror)
    return match.group(1).removeprefix("refs/heads/")


async def resolve(mirror: Path, ref: str, auth: Auth, timeout: float) -> tuple[str, str | None]:
    """The commit `ref` names, and the branch it is (None when it is no branch).

    A full ref or commit id the mirror lacks (a pull request head, a merge
    commit) is fetched.
    """
    candidates: list[tuple[str, str | None]] = []
    if ref.startswith("refs/"):
        branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
        candidates.append((ref, branch))
    candidates += [(f"refs/heads/{ref}", ref), (f"refs/tags/{ref}", None)]
    if _SHA.fullmatch(ref):
        candidates.append((ref, None))
    for name, branch in candidates:
        found = await run_git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
            what="rev-parse",
            git_dir=mirror,
            check=False,
        )
        if found.code == 0:
            return found.text, branch
    if not (ref.startswith("refs/") or _SHA.fullmatch(ref)):
        raise GitError(f"git clone failed: no branch or tag named {ref!r} in the repository")
    await run_git(
        ["fetch", "--quiet", "--no-tags", "origin", ref],
        what="fetch",
        git_dir=mirror,
        config=_KEEP_PACKS,
        auth=auth,
        timeout=timeout,
    )
    args = ["rev-parse", "--verify", "FETCH_HEAD^{commit}"]
    return (await run_git(args, what="rev-parse", git_dir=mirror)).text, None


async def fetch_recent_blobs(
    git_dir: Path,
    commit: str,
    auth: Auth,
    timeout: float,
    *,
    depth: int = RECENT_COMMITS,
    config: Sequence[tuple[str, str]] = _KEEP_PACKS,
) -> int:
    """Fetch the blobs of `commit` and the `depth - 1` commits before it that `git_dir`
    lacks, in one request; how many."""
    listed = await run_git(
        ["rev-list", "--objects", "--missing=print", f"--max-count={depth}", commit, "--"],
        what="rev-list",
        git_dir=git_dir,
        timeout=timeout,
    )
    missing = [line[1:] for line in listed.text.splitlines() if line.startswith("?")]
    if missing:
        # What git's own lazy fetch runs, for all of them in one request.
        await run_git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
            ],
            what="fetch",
            git_dir=git_dir,
            config=[*config, ("fetch.negotiationAlgorithm", "noop")],
            auth=auth,
            stdin="".join(f"{oid}\n" for oid in missing).encode(),
            timeout=timeout,
        )
    return len(missing)
