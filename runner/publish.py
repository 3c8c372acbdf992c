"""A job's work, on the host once the agent is done: committed, then pushed or proposed.

Paths under WORKFLOWS_DIR are reverted unless the spec allows them, nested
repositories and generated files are left out (`runner.git.stage_all`), and
the commit's message says what the model's summary says, with no closing
keyword live. A fork's change is pushed only when the spec's `Fork.push` says
so; otherwise it is proposed as a patch against the fork's head.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

# Host-side git runner.git has no public function for yet (listing and
# reverting paths, merge-base) runs through its hardened internals.
from runner import git as host_git
from runner.closing import inert_closing_keywords
from runner.context.prompt import WORKFLOWS_DIR
from runner.fork import ForkResult, ForkStart, proposed
from runner.git import Author, DiffStat, GitError, commit_staged, diffstat, push
from runner.job_spec import JobSpec

__all__ = ["Committed", "has_changes", "publish"]


@dataclass(frozen=True, slots=True)
class Committed:
    """What the host made of the tree: the commit and its numbers, and what it left out."""

    # A commit was made (pushed, or a fork's proposed): the work changed something.
    changed: bool = False
    commit: str | None = None  # pushed
    stat: DiffStat | None = None
    subject: str | None = None
    # Under WORKFLOWS_DIR, reverted; embedded repositories; generated files by kind.
    blocked: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    generated: tuple[tuple[str, int], ...] = ()
    fork: ForkResult | None = None


async def has_changes(tree: Path, start: str) -> bool:
    """Whether the tree differs from `start`, where the work branch started (what
    would be committed)."""
    await host_git.stage_all(tree)
    changed = await host_git.run_local(tree, "diff", "--cached", "--name-only", "-z", start, "--")
    return bool(changed.strip(b"\0"))


async def publish(
    spec: JobSpec, tree: Path, *, start: str, summary: str, fork: ForkStart | None
) -> Committed:
    """Drop blocked paths, commit the rest on the work branch over `start`, push it.

    `summary` is the model's, for the commit's message; `fork` the fork's head
    the work started from, if any.
    """

    async def git(*args: str, check: bool = True) -> bytes:
        return await host_git.run_local(tree, *args, check=check)

    # Whatever the agent did to HEAD, the job's commit goes on the work branch,
    # on top of where it started; commits the agent made fold into it.
    await git("symbolic-ref", "HEAD", f"refs/heads/{spec.work_branch}")
    await git("reset", "--quiet", "--no-refresh", start, "--")
    staged = await host_git.stage_all(tree)
    left_out = tuple(_shown(path) for path in staged.embedded)
    # What is staged, from where the work started (HEAD is there now).
    changed = await git("diff", "--cached", "--name-only", "-z", "--no-renames", start)
    paths = [p for p in changed.decode(errors="replace").split("\0") if p]
    blocked: tuple[str, ...] = ()
    if not spec.allow_workflow_edits:
        blocked = await _drop_workflow_edits(tree, start, paths)
        paths = [path for path in paths if not _is_workflow(path)]
    committed = Committed(blocked=blocked, left_out=left_out, generated=staged.generated)
    if not paths:
        return committed
    co_authors = [f"{spec.co_author[0]} <{spec.co_author[1]}>"] if spec.co_author else []
    subject, message = spec.commit.message(summary, paths)
    # The message quotes the model's summary, which an issue's text can steer:
    # none of it may close an issue when the commit reaches the default branch.
    subject, message = inert_closing_keywords(subject), inert_closing_keywords(message)
    commit = await commit_staged(
        tree,
        message,
        author=Author(spec.bot_name, spec.bot_email),
        co_authors=co_authors,
        trailers=[("Neo-Run", spec.run_url)] if spec.run_url else [],
    )
    if spec.fork is not None and not spec.fork.push:
        # A fork's code never reaches the base repository unasked: the change is
        # proposed against the fork's head, and nothing is pushed.
        assert fork is not None
        result = await proposed(tree, fork.head, commit)
        stat = await _diffstat(tree, start)
        return replace(committed, changed=True, stat=stat, fork=result, subject=subject)
    # What the pull request will show: the work since it left the base branch.
    stat = await _diffstat(tree, f"refs/remotes/origin/{spec.base_branch}", fork_point=True)
    if stat is None:  # no history in common with the base: since the work started
        stat = await _diffstat(tree, start)
    await push(tree, spec.work_branch, url=spec.repo_url, token=spec.token)
    committed = replace(committed, changed=True, commit=commit, stat=stat, subject=subject)
    if fork is not None:
        pushed = ForkResult(fork.head, pushed=True, left_out=fork.left_out)
        committed = replace(committed, fork=pushed)
    return committed


def _is_workflow(path: str) -> bool:
    """Whether `path` is under WORKFLOWS_DIR, as git's pathspec of it matches."""
    return path == WORKFLOWS_DIR or path.startswith(f"{WORKFLOWS_DIR}/")


async def _drop_workflow_edits(tree: Path, start: str, paths: list[str]) -> tuple[str, ...]:
    """The workflow files among the staged `paths`, sorted, each restored as at `start`."""
    blocked = tuple(sorted(path for path in paths if _is_workflow(path)))
    if blocked:
        await host_git.run_local(
            tree, "restore", f"--source={start}", "--staged", "--worktree", "--", WORKFLOWS_DIR
        )
    return blocked


async def _diffstat(tree: Path, base: str, *, fork_point: bool = False) -> DiffStat | None:
    try:
        return await diffstat(tree, base, fork_point=fork_point)
    except GitError:
        return None  # the summary loses its numbers; the change is still good


def _shown(path: str) -> str:
    """A path from the file system as text: undecodable bytes become U+FFFD."""
    return os.fsencode(path).decode(errors="replace")
