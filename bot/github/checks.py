"""What a CI repair reads from GitHub: a pull request's head, its head commit's
people, its failed check runs and their annotations, as frozen values, and the
calls that read them (`Checks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot.github.core import FAILED_CONCLUSIONS
from bot.github.repo_base import PAGE, RepoBase, login_of, text_of

__all__ = [
    "ACTIONS_APP",
    "Annotation",
    "CheckRun",
    "Checks",
    "HeadCommit",
    "PullHead",
]

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
    # The description as it is now (a maintainer may have edited it).
    body: str = ""


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
    # The check run's page on GitHub; "" when GitHub gave none.
    html_url: str = ""

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS

    @property
    def from_actions(self) -> bool:
        return self.app == ACTIONS_APP


class Checks(RepoBase):
    """A commit's check runs and their annotations, and its people."""

    async def head_commit(self, sha: str) -> HeadCommit:
        """Commit `sha`'s message, and its author and committer (linked login and email)."""
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/commits/{sha}",
                lambda: self._github.rest.repos.async_get_commit(
                    self.owner, self.name, sha, per_page=1
                ),
            )
        )
        data = response.parsed_data
        git_author, git_committer = data.commit.author, data.commit.committer
        return HeadCommit(
            sha=data.sha,
            message=data.commit.message,
            author_login=login_of(data.author),
            committer_login=login_of(data.committer),
            author_email=(git_author.email if git_author else None) or "",
            committer_email=(git_committer.email if git_committer else None) or "",
        )

    async def check_runs(self, sha: str) -> tuple[CheckRun, ...]:
        """The latest completed check run of each check on commit `sha` (first 100)."""
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/commits/{sha}/check-runs",
                lambda: self._github.rest.checks.async_list_for_ref(
                    self.owner,
                    self.name,
                    sha,
                    status="completed",
                    filter_="latest",
                    per_page=PAGE,
                ),
            )
        )
        runs: list[CheckRun] = []
        for run in response.parsed_data.check_runs:
            output = run.output
            runs.append(
                CheckRun(
                    id=int(run.id),
                    name=run.name,
                    conclusion=str(run.conclusion or ""),
                    app=text_of(getattr(run.app, "slug", None)),
                    title=text_of(output.title),
                    summary=text_of(output.summary),
                    text=text_of(output.text),
                    annotations_count=int(output.annotations_count),
                    html_url=text_of(run.html_url),
                )
            )
        return tuple(runs)

    async def annotations(self, check_run_id: int, limit: int = 50) -> tuple[Annotation, ...]:
        """The first `limit` annotations of check run `check_run_id`."""
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/check-runs/{check_run_id}/annotations",
                lambda: self._github.rest.checks.async_list_annotations(
                    self.owner, self.name, check_run_id, per_page=min(limit, PAGE)
                ),
            )
        )
        return tuple(
            Annotation(
                path=item.path,
                start_line=item.start_line,
                level=text_of(item.annotation_level),
                title=text_of(item.title),
                message=text_of(item.message),
            )
            for item in response.parsed_data[:limit]
        )
