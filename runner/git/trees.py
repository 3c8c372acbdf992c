"""A job's working tree from the mirror: the clone, its work branch, a pull
request's head and its blobs, and git commands run on it offline.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from runner.git.mirrors import (
    MirrorCache,
    clone_mirror,
    default_branch,
    fetch_recent_blobs,
    prune_branches,
    resolve,
)
from runner.git.process import (
    LOCAL_TIMEOUT,
    NETWORK_TIMEOUT,
    OFFLINE,
    Auth,
    GitError,
    check_branch_name,
    check_url,
    run_git,
)
from runner.git.sanitize import sanitize

__all__ = [
    "checkout_branch",
    "clone",
    "clone_branch",
    "fetch_blobs",
    "fetch_pull_head",
    "fetch_pull_request",
    "run_local",
]


def _is_empty_or_absent(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


async def clone(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    ref: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> str:
    """Make `dest` a working tree of `url` at `ref`; return the checked-out commit.

    `ref` is a branch (checked out as a local branch tracking origin's), a
    tag, a full ref such as `refs/pull/7/head`, or a commit id (those three
    detached); None is the repository's default branch. `dest` must not exist
    or be an empty directory; after a failure it may hold a partial tree,
    which the caller discards.
    """
    commit, _ = await _clone(url, dest, token=token, cache=cache, ref=ref, timeout=timeout)
    return commit


async def clone_branch(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    branch: str,
    base: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> tuple[str, bool]:
    """`branch` of `url` in `dest` when the repository has it, else `base` (a ref as
    `clone` takes it); the checked-out commit, and whether it is `branch`.

    One update of the mirror decides, where trying `branch` and then `base`
    with `clone` would update it twice. The caller makes `branch` when it
    was not there (`checkout_branch`).
    """
    return await _clone(
        url, dest, token=token, cache=cache, ref=base, prefer=branch, timeout=timeout
    )


async def _clone(
    url: str,
    dest: Path,
    *,
    token: str,
    cache: MirrorCache,
    ref: str | None,
    prefer: str | None = None,
    timeout: float,
) -> tuple[str, bool]:
    """Clone branch `prefer` if the mirror has it after its update, else `ref`."""
    url = check_url(url)
    if not await asyncio.to_thread(_is_empty_or_absent, dest):
        raise GitError(f"clone destination is not empty: {dest}")
    auth = Auth(url, token)
    # git checks the branch's name while the mirror is fetched into; then
    # `_branch_commit` finds the verdict kept (`check_branch_name`).
    checking = asyncio.ensure_future(check_branch_name(prefer)) if prefer is not None else None
    try:
        async with cache.locked(url) as mirror:
            await cache.update(mirror, auth, timeout)
            found = None if prefer is None else await _branch_commit(mirror, prefer, checking)
            if found is not None:
                commit, branch = found, prefer
            else:
                if ref is None:
                    ref = await default_branch(mirror, auth, timeout)
                commit, branch = await resolve(mirror, ref, auth, timeout)
            await fetch_recent_blobs(mirror, commit, auth, timeout)
            # Under the lock: a fetch's repack could otherwise swap packs mid-copy.
            from_spare = await cache.take_spare(mirror, url, dest)
            if not from_spare:
                await clone_mirror(mirror, dest, timeout)
    finally:
        if checking is not None:  # ended, and what it raised retrieved
            checking.cancel()
            await asyncio.gather(checking, return_exceptions=True)
    git_dir = await sanitize(dest, origin=url, branch=branch)
    await run_git(
        ["checkout", "--quiet", *(["-B", branch] if branch else ["--detach"]), commit],
        what="checkout",
        git_dir=git_dir,
        work_tree=dest,
        config=OFFLINE,
        timeout=timeout,
    )
    if not from_spare:  # a spare tree has no branch of its own
        await prune_branches(git_dir, keep=branch)
    cache.replenish(url, commit)
    return commit, found is not None


async def _branch_commit(
    mirror: Path, branch: str, checking: asyncio.Future[None] | None = None
) -> str | None:
    """The commit of branch `branch` in the mirror; None when it has no such branch.

    `checking`: the check of the name (`check_branch_name`), already under way.
    """
    await (checking if checking is not None else check_branch_name(branch))
    found = await run_git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"refs/heads/{branch}^{{commit}}"],
        what="rev-parse",
        git_dir=mirror,
        check=False,
    )
    return found.text if found.code == 0 else None


async def checkout_branch(
    tree: Path, name: str, *, start: str | None = None, timeout: float = LOCAL_TIMEOUT
) -> None:
    """Create branch `name` at `start` (default HEAD), or reset it there; check it out.

    Local changes are carried over when git can. `start` must be a commit
    whose files are present (the cloned one or one made since).
    """
    await check_branch_name(name)
    git_dir = await sanitize(tree)
    if start is not None and start.startswith("-"):
        raise GitError(f"not a valid start point: {start!r}")
    # The `--` ends the revisions: `start` is never taken for a path.
    start_at = [start, "--"] if start is not None else []
    await run_git(
        ["checkout", "--quiet", "-B", name, *start_at],
        what="checkout",
        git_dir=git_dir,
        work_tree=tree,
        config=OFFLINE,
        timeout=timeout,
    )


async def fetch_pull_request(
    tree: Path,
    number: int,
    *,
    url: str,
    token: str,
    branch: str | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> str:
    """Fetch `refs/pull/<number>/head` from `url` and check it out as a local branch.

    The branch is `branch`, by default `pull/<number>`; returns the head
    commit. `url` is passed in rather than read from the tree, whose
    configuration the sandbox may have changed: the token goes only where the
    caller says.
    """
    if number < 1:
        raise GitError(f"not a pull request number: {number}")
    url = check_url(url)
    name = branch or f"pull/{number}"
    await check_branch_name(name)
    auth = Auth(url, token)
    git_dir = await sanitize(tree, origin=url)
    remote_ref = f"refs/remotes/origin/pull/{number}"
    await run_git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "origin",
            f"+refs/pull/{number}/head:{remote_ref}",
        ],
        what="fetch",
        git_dir=git_dir,
        work_tree=tree,
        auth=auth,
        timeout=timeout,
    )
    # The checkout lazily fetches the blobs the head adds, with the same token.
    await run_git(
        ["checkout", "--quiet", "-B", name, remote_ref],
        what="checkout",
        git_dir=git_dir,
        work_tree=tree,
        auth=auth,
        timeout=timeout,
    )
    return (await run_git(["rev-parse", "HEAD"], what="rev-parse", git_dir=git_dir)).text


async def run_local(
    tree: Path, *args: str, check: bool = True, stdin: bytes | None = None
) -> bytes:
    """Run an offline git command in `tree` under the same protections as
    every operation here (sanitised config, no hooks, no lazy fetch); its stdout.

    For steps this module has no function for (reset, restore, diff).
    """
    git_dir = await sanitize(tree)
    result = await run_git(
        args,
        what=args[0] if args else "git",
        git_dir=git_dir,
        work_tree=tree,
        config=OFFLINE,
        stdin=stdin,
        check=check,
    )
    return result.stdout


async def fetch_pull_head(
    tree: Path, number: int, *, url: str, token: str, timeout: float = NETWORK_TIMEOUT
) -> str:
    """Fetch `refs/pull/<number>/head` from `url` into `tree`, its commits and trees only
    (no blob, no checkout); the head commit, also at `refs/remotes/origin/pull/<number>`.

    `url` is passed in rather than read from the tree, whose configuration the
    sandbox may have changed: the token goes only where the caller says.
    """
    if number < 1:
        raise GitError(f"not a pull request number: {number}")
    url = check_url(url)
    git_dir = await sanitize(tree, origin=url)
    remote_ref = f"refs/remotes/origin/pull/{number}"
    await run_git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "origin",
            f"+refs/pull/{number}/head:{remote_ref}",
        ],
        what="fetch",
        git_dir=git_dir,
        work_tree=tree,
        auth=Auth(url, token),
        timeout=timeout,
    )
    return (await run_git(["rev-parse", remote_ref], what="rev-parse", git_dir=git_dir)).text


async def fetch_blobs(
    tree: Path,
    commit: str,
    *,
    url: str,
    token: str,
    depth: int = 1,
    timeout: float = NETWORK_TIMEOUT,
) -> int:
    """Fetch, in one request, the blobs `tree` lacks for `commit` and the `depth - 1`
    commits before it; how many. After it, their checkout needs no network."""
    url = check_url(url)
    git_dir = await sanitize(tree, origin=url)
    return await fetch_recent_blobs(
        git_dir, commit, Auth(url, token), timeout, depth=depth, config=()
    )
