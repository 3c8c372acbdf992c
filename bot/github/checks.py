"""What a CI repair reads from GitHub, as frozen values: a pull request's head, its
head commit's people, its failed check runs and their annotations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACTIONS_APP",
    "FAILED_CONCLUSIONS",
    "Annotation",
    "CheckRun",
    "HeadCommit",
    "PullHead",
]

# Conclusions that say the code is wrong; cancelled, neutral, skipped and
# action_required say nothing about it.
FAILED_CONCLUSIONS: Final = frozenset({"failure", "timed_out"})
# The App behind GitHub Actions' check runs: the run's id is the job's.
ACTIONS_APP: Final = "github-actions"


@dataclass(frozen=True, slots=True)
class PullHead:
    """A pull request's head as GitHub has it now, and who opened it."""

    number: int
    title: str
    html_url: str
    author: str
    state: str  # open, closed
    head_ref: str
    head_sha: str
    head_repository: str | None  # None: the fork was deleted


@dataclass(frozen=True, slots=True)
class HeadCommit:
    """A commit's message and people: GitHub's linked accounts, and git's own fields."""

    sha: str
    message: str
    author_login: str | None  # None: no account has the commit's email
    committer_login: str | None
    author_email: str
    committer_email: str


@dataclass(frozen=True, slots=True)
class Annotation:
    path: str
    start_line: int
    level: str  # failure, warning, notice
    title: str
    message: str


@dataclass(frozen=True, slots=True)
class CheckRun:
    """A completed check run: its output as the check wrote it (untrusted text)."""

    id: int
    name: str
    conclusion: str
    app: str | None  # the slug of the App that made it
    title: str
    summary: str
    text: str
    annotations_count: int

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS

    @property
    def from_actions(self) -> bool:
        return self.app == ACTIONS_APP
