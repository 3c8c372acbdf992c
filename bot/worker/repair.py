"""A CI repair's decisions: whether to repair, which attempt, whose session. Pure.

The worker reads the pull request, its head commit and its checks from GitHub;
these say what to do with them. Attempts are counted from git history alone:
each repair commit carries a `Neo-CI-Repair: N` trailer, so a head that is not
a repair commit (Neo's ordinary work) starts the count again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from bot.github.checks import CheckRun, HeadCommit, PullHead
from bot.jobs import Thread
from bot.worker.spec import branch_thread, noreply_email
from runner.subject import CommitText

__all__ = [
    "TRAILER",
    "Owner",
    "Skip",
    "limit_text",
    "made_by",
    "owning_thread",
    "repair_commit",
    "repairs_so_far",
    "skip_reason",
]

TRAILER: Final = "Neo-CI-Repair"
_TRAILER_LINE = re.compile(rf"^{TRAILER}:\s*([1-9][0-9]{{0,3}})\s*$", re.IGNORECASE)


class Skip(StrEnum):
    """Why a red check gets no repair; logged, never said on the thread."""

    DISABLED = "ci_repair is not enabled"
    CLOSED = "the pull request is closed"
    NOT_NEOS = "the pull request is not one neo opened"
    FORK = "the pull request's head is in another repository"
    SUPERSEDED = "a newer commit is the pull request's head"
    NOT_NEOS_PUSH = "neo did not make the head commit"
    GREEN = "no check of the head failed"
    BUSY = "the session's thread has a job queued or running"


def skip_reason(pull: PullHead, *, red_sha: str | None, bot: str, repository: str) -> Skip | None:
    """Why the pull request as GitHub has it now is not Neo's to repair at `red_sha`."""
    if pull.state != "open":
        return Skip.CLOSED
    if pull.author.lower() != bot.lower():
        return Skip.NOT_NEOS
    if (pull.head_repository or "").lower() != repository.lower():
        return Skip.FORK
    if red_sha is None or pull.head_sha != red_sha:
        return Skip.SUPERSEDED
    return None


def made_by(commit: HeadCommit, bot: str) -> bool:
    """Whether Neo both authored and committed `commit`.

    GitHub links a commit to an account by its email; where it links none,
    git's own fields must carry the bot's no-reply address. A human who
    amended, rebased or pushed on top is the committer, and that is a no.
    """

    def is_bot(login: str | None, email: str) -> bool:
        if login is not None:
            return login.lower() == bot.lower()
        return email.lower() == noreply_email(bot).lower()

    return is_bot(commit.author_login, commit.author_email) and is_bot(
        commit.committer_login, commit.committer_email
    )


def repairs_so_far(message: str) -> int:
    """The attempt a repair commit's trailer names; 0 for any other commit."""
    paragraphs = message.strip().split("\n\n")
    if len(paragraphs) < 2:
        return 0  # a subject alone has no trailers
    for line in reversed(paragraphs[-1].splitlines()):
        found = _TRAILER_LINE.match(line.strip())
        if found:
            return int(found[1])
    return 0


def repair_commit(number: int, attempt: int, failed: Sequence[CheckRun]) -> CommitText:
    """The repair commit's text: the fix as the model says it, the thread it was for,
    and the trailer counting the attempt (the last paragraph, as trailers are)."""
    names = list(dict.fromkeys(" ".join(run.name.split()) for run in failed))
    fallback = f"Make the {names[0]} check pass" if len(names) == 1 else "Make the checks pass"
    return CommitText(body=f"Refs #{number}\n\n{TRAILER}: {attempt}", fallback=fallback)


@dataclass(frozen=True, slots=True)
class Owner:
    """The thread whose work made the pull request: its session and progress comment."""

    thread: Thread
    # False: the branch names no thread (a schedule's), so the pull request is its own.
    from_branch: bool


def owning_thread(head_ref: str, prefix: str, pull: int, repository: str) -> Owner:
    """The thread a Neo branch was made for (`branch_thread`); any other branch
    belongs to the pull request itself."""
    found = branch_thread(head_ref, prefix, repository)
    if found is not None:
        return Owner(found, True)
    return Owner(Thread(repository, pull, is_pull_request=True), False)


def limit_text(attempts: int, failed: Sequence[CheckRun], handle: str) -> str:
    """The one comment when the repairs in a row are spent."""
    # In a code span, where an `@team` in a check's name pings no one; a backtick
    # of its own would end the span.
    names = ", ".join(
        f"`{' '.join(run.name.replace('`', chr(39)).split())[:100]}`" for run in failed[:10]
    )
    more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
    checks = f" ({names}{more})" if names else ""
    tries = "attempt" if attempts == 1 else "attempts"
    return (
        f"CI is still red after {attempts} repair {tries}{checks}, so Neo stops here."
        f" Mention {handle} on this pull request to ask for another try, or push a fix."
    )
