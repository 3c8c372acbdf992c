"""One job's context, built once its config is read: what every later step reads.

As probot's `Context`: the job and its request, the repository's GitHub
client, the config from the default branch, the default branch, the live
progress and its comment. How a job ended (`Ended`) is returned, never
written into it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import RepoConfig
from bot.github.client import RepoClient
from bot.jobs import Job, JobRequest
from bot.queue import SpendRecord
from bot.worker.progress import Outcome, Progress

__all__ = ["Ended", "JobContext", "ProgressComment", "with_lead"]


@dataclass(frozen=True, slots=True)
class ProgressComment:
    """The one comment a job edits while it runs and turns into its report.

    `lead` goes under the comment's first line (its marker) in every edit: what
    a CI repair's round says of itself above its progress, then its report.
    """

    github: RepoClient
    id: int
    lead: str = ""

    async def edit(self, text: str) -> None:
        await self.github.update_progress(self.id, with_lead(text, self.lead))


def with_lead(text: str, lead: str) -> str:
    """`text` with `lead` after its first line, as its own paragraph."""
    if not lead:
        return text
    first, _, rest = text.partition("\n")
    return f"{first}\n{lead}\n\n{rest.lstrip(chr(10))}" if rest else f"{first}\n{lead}"


@dataclass(frozen=True, slots=True)
class JobContext:
    job: Job
    github: RepoClient
    config: RepoConfig
    default_branch: str
    # The job's live state, which the progress comment shows (mutable by design).
    progress: Progress
    # None: a job with no thread, or one that has not posted its comment.
    comment: ProgressComment | None = None

    @property
    def request(self) -> JobRequest:
        return self.job.request

    @property
    def bot(self) -> str:
        """Neo's login, as the App (or the workflow's token) answered once for the client."""
        return self.github.bot_login


@dataclass(frozen=True, slots=True)
class Ended:
    """How a job ended: the outcome its report tells, the branch and session its run
    used, and what the run spent (the report carries it, and the queue gets it)."""

    outcome: Outcome
    branch: str | None = None
    session_id: str | None = None
    spend: tuple[SpendRecord, ...] = ()
    # Whether `spend` is in the queue already (written when the run ended).
    spend_recorded: bool = False
