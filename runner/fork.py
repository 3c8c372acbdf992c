"""A fork's pull request on the host: its head checked out within bounds, and what of
it may reach the base repository.

A fork's code is an outsider's. Pushed to a branch of the base repository it
runs there with the repository's secrets: its own workflows if it brings
any (the `pull_request_target` pattern), and the base's push workflows,
which run whatever the branch holds. So, by default (`Fork.push` false), a
job on a fork's pull request pushes nothing: it works on the fork's head and
proposes its change as a patch against that head (`Proposal`), for the
pull request's author to apply. Only when the repository opts in
(`fork_work: push` on its default branch) does the work branch go to the
base repository, and then it starts from the merge base with the base
branch plus the fork's changes squashed into one commit, less every change
to CI configuration (`CI_CONFIG`): a fork never brings workflows, and the
report names what was left out.

A fork's head is checked out only within `CheckoutLimits`: a few hundred
kilobytes of packed objects can hold a hundred thousand files and hundreds
of megabytes (a "git bomb"), so the files and bytes it adds to the base
branch are counted from trees and blob headers before a file is written, and
the whole checkout has a time limit.

docs/github-app.md, "Pull requests from forks", is the user's side of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from runner import git as host_git
from runner.git import GitError

__all__ = [
    "CI_CONFIG",
    "MAX_PATCH_CHARS",
    "PROPOSING",
    "CheckoutLimits",
    "Fork",
    "ForkRefused",
    "ForkResult",
    "ForkStart",
    "checkout_fork_head",
    "fork_note",
    "proposed",
    "squash_onto_base",
]

# What decides what CI runs, and with which secrets: GitHub's workflows and the
# local actions they call, a repository that is itself an action, and the other
# CI services' files. A fork's changes to them never reach the base repository.
CI_CONFIG = (
    ".github/workflows",
    ".github/actions",
    "action.yml",
    "action.yaml",
    ".gitlab-ci.yml",
    ".circleci",
    ".travis.yml",
    "azure-pipelines.yml",
    ".azure-pipelines",
    "Jenkinsfile",
    ".buildkite",
    ".drone.yml",
    "bitbucket-pipelines.yml",
    "appveyor.yml",
    ".appveyor.yml",
    ".woodpecker.yml",
    ".woodpecker",
    ".cirrus.yml",
    "cloudbuild.yaml",
)
# Literal pathspecs from the top of the tree: `Jenkinsfile` is the top one only.
_CI_PATHSPECS = tuple(f":(top,literal){path}" for path in CI_CONFIG)

# A proposal longer than this is described, not carried: no comment holds it.
MAX_PATCH_CHARS = 1_000_000

# Added to the task when nothing is pushed: the model writes for a patch.
PROPOSING = (
    "This pull request comes from a fork. The working tree is its head; nothing you"
    " change is pushed. Neo's report gives your change to the pull request's author as"
    " a patch against that head, with your final message: keep the change to what was"
    " asked, and say in your final message what it does."
)

_GITLINK = "160000"
_SHORT = 12
# Paths a commit message names before it counts the rest.
_NAMED = 20


class ForkRefused(GitError):
    """A fork's head Neo will not check out or work on; one line saying why."""

    kind = "fork_refused"


@dataclass(frozen=True, slots=True)
class CheckoutLimits:
    """How much a fork's head may add to the base branch's checkout, and how long it may take."""

    files: int = 10_000
    bytes: int = 256 * 1024 * 1024
    seconds: float = 180.0


@dataclass(frozen=True, slots=True)
class Fork:
    """A job on a fork's pull request (`JobSpec.fork`)."""

    # The head as the caller read it with the pull request (the diff the model
    # is shown): the job works on exactly that commit, or fails. None: any.
    head: str | None = None
    # `fork_work: push`: the work branch, with the fork's changes, goes to the
    # base repository. Otherwise nothing is pushed and the change is proposed.
    push: bool = False
    limits: CheckoutLimits = CheckoutLimits()


@dataclass(frozen=True, slots=True)
class ForkStart:
    """Where a fork job's work starts: the commit, and what of the fork was left out."""

    commit: str
    head: str  # the fork's head it comes from
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ForkResult:
    """What a job on a fork's pull request did with the fork's code (`JobResult.fork`)."""

    head: str  # the fork's head the job worked from
    pushed: bool  # the work branch, with the fork's changes, went to the base repository
    # The fork's changes to CI configuration left out of that branch.
    left_out: tuple[str, ...] = ()
    # Not pushed: Neo's change as a patch against `head` (`git apply`), when it made
    # one and it is at most MAX_PATCH_CHARS long; its length and paths either way.
    patch: str | None = None
    patch_chars: int = 0
    patch_files: tuple[str, ...] = ()

    @property
    def proposed(self) -> bool:
        """Neo changed something and proposes it rather than pushing it."""
        return not self.pushed and bool(self.patch_files)


async def checkout_fork_head(
    tree: Path, number: int, *, fork: Fork, base: str, branch: str, url: str, token: str
) -> str:
    """Fetch pull request `number`'s head into `tree` and check it out as `branch`, within
    `fork.limits` of what `base` (a commit or ref in the tree) checks out; the head.

    Raises ForkRefused, in one line, when the head is not the one the caller
    read, adds too many files or bytes, or takes too long.
    """
    limits = fork.limits
    deadline = time.monotonic() + limits.seconds

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _too_slow(number, limits)
        return remaining

    try:
        head = await host_git.fetch_pull_head(tree, number, url=url, token=token, timeout=left())
        if fork.head is not None and head != fork.head:
            raise ForkRefused(
                f"pull request #{number}'s head moved from {fork.head[:_SHORT]} to"
                f" {head[:_SHORT]} after Neo read it: ask again once it is where you want it"
            )
        added = await _added_entries(tree, base, head)
        if len(added) > limits.files:
            raise ForkRefused(
                f"pull request #{number}'s head adds or changes {len(added):,} files, more"
                f" than the {limits.files:,} Neo checks out from a fork: it was not checked out"
            )
        await host_git.fetch_blobs(tree, head, url=url, token=token, timeout=left())
        size = await _size(tree, added)
        if size > limits.bytes:
            raise ForkRefused(
                f"pull request #{number}'s head adds or changes {_mib(size)} of files, more"
                f" than the {_mib(limits.bytes)} Neo checks out from a fork: it was not"
                " checked out"
            )
        await host_git.checkout_branch(tree, branch, start=head, timeout=left())
    except ForkRefused:
        raise
    except GitError as error:
        if time.monotonic() >= deadline or "timed out" in str(error):
            raise _too_slow(number, limits) from None
        raise
    return head


def _too_slow(number: int, limits: CheckoutLimits) -> ForkRefused:
    return ForkRefused(
        f"fetching and checking out pull request #{number}'s head took more than"
        f" {limits.seconds:g} s, the most Neo gives a fork's: it was stopped"
    )


async def _added_entries(tree: Path, base: str, head: str) -> list[tuple[str, str]]:
    """(object id, path) of each file `head` adds or changes against `base`; from trees alone."""
    listed = await host_git.run_local(
        tree, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", base, head
    )
    fields = listed.split(b"\0")
    added: list[tuple[str, str]] = []
    # Each entry: ":<old mode> <new mode> <old id> <new id> <status>" then its path.
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        _, new_mode, _, new_id, status = meta[1:].decode().split(" ")
        if status != "D" and new_mode != _GITLINK:
            added.append((new_id, path.decode(errors="replace")))
    return added


async def _size(tree: Path, added: list[tuple[str, str]]) -> int:
    """The bytes the entries `added` check out: blob headers, read offline."""
    if not added:
        return 0
    unique = sorted({oid for oid, _ in added})
    checked = await host_git.run_local(
        tree,
        "cat-file",
        "--batch-check=%(objectname) %(objectsize)",
        stdin="".join(f"{oid}\n" for oid in unique).encode(),
    )
    sizes: dict[str, int] = {}
    for line in checked.decode().splitlines():
        oid, _, size = line.partition(" ")
        if size.isdigit():
            sizes[oid] = int(size)
    # A blob the fetch did not bring counts as nothing here; checking it out
    # would need the network, which the tree's checkout does not have.
    return sum(sizes.get(oid, 0) for oid, _ in added)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):,.1f} MiB"


async def squash_onto_base(
    tree: Path,
    *,
    base: str,
    head: str,
    number: int,
    url: str,
    token: str,
    author: host_git.Author,
) -> ForkStart:
    """The checked-out branch moved to the merge base of `base` and `head`, plus one commit
    holding the fork's changes but those to CI configuration; the commit, and the
    paths left out.

    `head` is checked out on the branch (`checkout_fork_head`). The fork's own
    commits are not kept: each would be pushed, and GitHub refuses a push
    any of whose commits touches a workflow without the `workflows`
    permission, whatever the last one holds.
    """
    merge_base = (await host_git.run_local(tree, "merge-base", base, head)).decode().strip()
    if not merge_base:
        raise ForkRefused(f"pull request #{number}'s head shares no history with the base branch")
    listed = await host_git.run_local(
        tree, "diff", "--name-only", "-z", "--no-renames", merge_base, head, "--", *_CI_PATHSPECS
    )
    left_out = tuple(sorted(p.decode(errors="replace") for p in listed.split(b"\0") if p))
    # The index and the files stay the fork's; the branch moves to the merge base.
    await host_git.run_local(tree, "reset", "--soft", "--quiet", merge_base, "--")
    if left_out:
        # The base's versions of those files, which the restore writes.
        await host_git.fetch_blobs(tree, merge_base, url=url, token=token)
        await host_git.run_local(
            tree,
            "restore",
            f"--source={merge_base}",
            "--staged",
            "--worktree",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin=b"".join(f":(top,literal){path}".encode() + b"\0" for path in left_out),
        )
    message = f"Pull request #{number}'s changes at {head[:_SHORT]}"
    if left_out:
        named = ", ".join(left_out[:_NAMED])
        more = len(left_out) - _NAMED
        named += f" and {more:,} more" if more > 0 else ""
        message += f"\n\nLeft out, as CI configuration from a fork: {named}."
    commit = await host_git.commit_all(tree, message, author=author)
    return ForkStart(commit or merge_base, head, left_out)


async def proposed(tree: Path, head: str, commit: str) -> ForkResult:
    """Neo's change from the fork's `head` to its local `commit`, proposed rather than
    pushed: a patch `git apply` takes (binary files included), and the paths it touches."""
    patch = await host_git.run_local(
        tree, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-renames", head, commit, "--"
    )
    names = await host_git.run_local(
        tree, "diff", "--name-only", "-z", "--no-renames", head, commit, "--"
    )
    text = patch.decode(errors="replace")
    return ForkResult(
        head=head,
        pushed=False,
        patch=text if len(text) <= MAX_PATCH_CHARS else None,
        patch_chars=len(text),
        patch_files=tuple(p.decode(errors="replace") for p in names.split(b"\0") if p),
    )


def fork_note(fork: ForkResult, branch: str) -> str | None:
    """What the thread's next job must know of what this one did with the fork's code."""
    if fork.proposed:
        return (
            "[Neo: the pull request comes from a fork, so this job's change was not pushed:"
            f" Neo's report proposed it as a patch against the fork's head {fork.head[:_SHORT]}."
            " The next job starts from the fork's head again, which holds the change only"
            " if its author applied the patch.]"
        )
    if fork.left_out:
        named = ", ".join(fork.left_out[:_NAMED])
        return (
            f"[Neo: branch {branch} holds the fork's changes at {fork.head[:_SHORT]}"
            f" without those to CI configuration: {named}.]"
        )
    return None
