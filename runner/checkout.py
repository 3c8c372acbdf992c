"""A job's working tree on the host, before the agent: the work branch, a fork's
head, or a review's pull request with its diff.

Everything here runs git on the host, through the mirror cache (`runner.git`);
the sandbox sees the tree only once it is checked out.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

# Host-side git runner.git has no public function for yet (merge-base, the
# diff) runs through its hardened internals.
from runner import git as host_git
from runner.fork import ForkStart, checkout_fork_head, squash_onto_base
from runner.git import Author, MirrorCache, checkout_branch, clone_branch, fetch_pull_request
from runner.job_spec import JobSpec

__all__ = ["CheckedOut", "check_out", "job_mirrors"]


@dataclass(frozen=True, slots=True)
class CheckedOut:
    """Where the work starts: the commit, a fork's head, a review's diff."""

    start: str  # the commit the work branch is at before the agent
    fork: ForkStart | None = None  # a fork's head the work started from
    diff: str = ""  # a review's: the pull request's whole diff


@contextlib.asynccontextmanager
async def job_mirrors(spec: JobSpec, cache: MirrorCache | None) -> AsyncIterator[MirrorCache]:
    """`cache`, else a mirror cache of the job's own under its data directory."""
    if cache is not None:
        yield cache
        return
    # A cache of its own lives for one job only: a spare tree would be wasted.
    async with MirrorCache(spec.data_dir / "mirrors", spare_trees=False) as own:
        yield own


async def check_out(spec: JobSpec, tree: Path, mirrors: MirrorCache) -> CheckedOut:
    """The spec's work in `tree`: a review's head, a fork's, or the work branch."""
    if spec.review:
        start, diff = await _checkout_review(spec, tree, mirrors)
        return CheckedOut(start, diff=diff)
    if spec.fork is not None:
        start, fork = await _start_on_fork(spec, tree, mirrors)
        return CheckedOut(start, fork=fork)
    return CheckedOut(await _checkout(spec, tree, mirrors))


async def _start_on_fork(
    spec: JobSpec, tree: Path, mirrors: MirrorCache
) -> tuple[str, ForkStart | None]:
    """`tree` where work on the spec's fork pull request starts, on its work branch;
    the commit.

    Nothing pushed: the fork's head. `fork.push`: the merge base plus the
    fork's changes bar CI configuration (`runner.fork.squash_onto_base`),
    unless the work branch exists in the repository, which is then continued
    as it is (and no fork's head is read: the ForkStart is None).
    """
    fork, number = spec.fork, spec.pull_request
    assert fork is not None
    assert number is not None
    start, continued = await clone_branch(
        spec.repo_url,
        tree,
        token=spec.token,
        cache=mirrors,
        # Nothing pushed: the base, whatever a branch of the work branch's name holds.
        branch=spec.work_branch if fork.push else spec.base_branch,
        base=spec.base_branch,
    )
    if fork.push and continued:
        return start, None
    base = f"refs/remotes/origin/{spec.base_branch}"
    head = await checkout_fork_head(
        tree,
        number,
        fork=fork,
        base=base,
        branch=spec.work_branch,
        url=spec.repo_url,
        token=spec.token,
    )
    if not fork.push:
        return head, ForkStart(head, head)
    started = await squash_onto_base(
        tree,
        base=base,
        head=head,
        number=number,
        url=spec.repo_url,
        token=spec.token,
        author=Author(spec.bot_name, spec.bot_email),
    )
    return started.commit, started


async def _checkout(spec: JobSpec, tree: Path, mirrors: MirrorCache) -> str:
    """Clone and put the work branch in `tree`; the commit it starts from."""
    # An existing work branch (a follow-up, a pull request's own branch, a
    # schedule's) is continued; otherwise it starts from the base. (A fork's
    # pull request: `_start_on_fork`.)
    start, continued = await clone_branch(
        spec.repo_url,
        tree,
        token=spec.token,
        cache=mirrors,
        branch=spec.work_branch,
        base=spec.base_branch,
    )
    if continued:
        return start
    await checkout_branch(tree, spec.work_branch)
    return start


async def _checkout_review(spec: JobSpec, tree: Path, mirrors: MirrorCache) -> tuple[str, str]:
    """The pull request's head in `tree`, fetched on the host (a fork's within its
    limits), and its diff from where it left the base (what GitHub shows as the PR's diff)."""
    assert spec.pull_request is not None
    await clone_branch(
        spec.repo_url,
        tree,
        token=spec.token,
        cache=mirrors,
        branch=spec.base_branch,
        base=spec.base_branch,
    )
    base = f"refs/remotes/origin/{spec.base_branch}"
    if spec.fork is not None:
        head = await checkout_fork_head(
            tree,
            spec.pull_request,
            fork=spec.fork,
            base=base,
            branch=spec.work_branch,
            url=spec.repo_url,
            token=spec.token,
        )
    else:
        head = await fetch_pull_request(
            tree, spec.pull_request, url=spec.repo_url, token=spec.token, branch=spec.work_branch
        )
    fork_point = (await host_git.run_local(tree, "merge-base", base, head)).decode().strip()
    diff = await host_git.run_local(
        tree, "diff", "--no-color", "--no-ext-diff", "--no-renames", fork_point, head, "--"
    )
    return head, diff.decode(errors="replace")
