"""A thread's issue or pull request: the thread read whole, a pull request's diff and
head, and the job's pull request opened or updated (found by its head branch)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Final, cast

from githubkit_schemas.latest.models import IssueComment, PullRequestSimple

from bot.github.checks import PullHead
from bot.github.errors import GitHubError
from bot.github.models import Issue, PullRequest, PullRequestRef, ThreadRead
from bot.github.repo_base import PAGE, RepoBase, association_of, comment_of, text_of

__all__ = ["DIFF_MEDIA_TYPE", "Pulls"]

# GitHub answers a pull request as its diff against the base for this media type.
DIFF_MEDIA_TYPE: Final = "application/vnd.github.diff"
# ... and a post with its Markdown rendered too (`body_html`: attachments' signed URLs).
FULL_MEDIA_TYPE: Final = {"Accept": "application/vnd.github.full+json"}


class Pulls(RepoBase):
    """This thread's issue or pull request, and the job's pull request."""

    async def read_thread(self, *, pull_request: bool) -> ThreadRead:
        """This thread: the issue (or PR), every comment oldest first, and the PR itself."""
        base = f"/repos/{self.repository}"
        rest = self._github.rest
        number = self.number
        issue = (
            await self._retrying(
                lambda: self._call(
                    "GET",
                    f"{base}/issues/{number}",
                    lambda: rest.issues.async_get(
                        self.owner, self.name, number, headers=FULL_MEDIA_TYPE
                    ),
                )
            )
        ).parsed_data
        comments = await self._pages(
            f"{base}/issues/{number}/comments",
            functools.partial(
                rest.issues.async_list_comments,
                self.owner,
                self.name,
                number,
                per_page=PAGE,
                headers=FULL_MEDIA_TYPE,
            ),
            list[IssueComment],
        )
        pull = None
        if pull_request:
            data = (
                await self._retrying(
                    lambda: self._call(
                        "GET",
                        f"{base}/pulls/{number}",
                        lambda: rest.pulls.async_get(self.owner, self.name, number),
                    )
                )
            ).parsed_data
            pull = PullRequest(
                number=data.number,
                head_ref=data.head.ref,
                head_repository=data.head.repo.full_name if data.head.repo else None,
                html_url=data.html_url,
                author=data.user.login if data.user else None,
                head_sha=data.head.sha,
            )
        opening = Issue(
            number=issue.number,
            title=issue.title,
            author=issue.user.login if issue.user else "ghost",
            association=association_of(issue.author_association),
            body=issue.body if isinstance(issue.body, str) else "",
            created_at=str(issue.created_at),
            body_html=text_of(issue.body_html),
        )
        return ThreadRead(opening, tuple(comment_of(c) for c in comments), pull)

    async def pull_request_diff(self, number: int | None = None) -> str:
        """Pull request `number`'s (default: this thread's) diff against its base.

        GitHub refuses a diff it finds too large (406): that is a GitHubError
        like any other, for the caller to report.
        """
        pull = self.number if number is None else number
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/pulls/{pull}",
                lambda: self._github.rest.pulls.async_get(
                    self.owner, self.name, pull, headers={"Accept": DIFF_MEDIA_TYPE}
                ),
            )
        )
        return response.content.decode("utf-8", errors="replace")

    async def pull_head(self, number: int | None = None) -> PullHead:
        """Pull request `number`'s (default: this thread's) head and author, as now."""
        pull = self.number if number is None else number
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/pulls/{pull}",
                lambda: self._github.rest.pulls.async_get(self.owner, self.name, pull),
            )
        )
        data = response.parsed_data
        return PullHead(
            number=data.number,
            title=data.title,
            html_url=data.html_url,
            author=data.user.login if data.user else "ghost",
            state=str(data.state),
            head_ref=data.head.ref,
            head_sha=data.head.sha,
            head_repository=data.head.repo.full_name if data.head.repo else None,
            body=data.body or "",
        )

    async def update_pull_body(self, number: int, body: str) -> None:
        """Set pull request `number`'s description to `body` (its title is left alone)."""
        await self._retrying(
            lambda: self._call(
                "PATCH",
                f"/repos/{self.repository}/pulls/{number}",
                lambda: self._github.rest.pulls.async_update(
                    self.owner, self.name, number, body=body
                ),
            )
        )

    async def open_or_update_pr(
        self,
        head: str,
        base: str,
        title: str,
        body: str,
        *,
        draft: bool = True,
        head_owner: str | None = None,
    ) -> PullRequestRef:
        """The open PR from `head` (a branch of `head_owner`, default the repository's
        owner) with its body set to `body`; a new (draft) PR into `base` if none is open.

        The title of an existing PR is left alone: a maintainer may have edited it.
        A repository whose plan allows no drafts gets a regular PR, and the
        answer says so (`draft` False). The job's conclusion, which the
        requester waits for: its writes are urgent (`MutationSpacer`).
        """
        owner = head_owner or self.owner
        label = f"{owner}:{head}"
        rest = self._github.rest.pulls

        async def find() -> tuple[int, str, str | None, bool] | None:
            response = await self._call(
                "GET",
                f"/repos/{self.repository}/pulls",
                lambda: rest.async_list(self.owner, self.name, state="open", head=label),
            )
            for pull in cast("list[PullRequestSimple]", response.parsed_data):
                if pull.head.ref == head:
                    return pull.number, pull.html_url, pull.body, pull.draft is True
            return None

        async def create(as_draft: bool) -> PullRequestRef:
            response = await self._call(
                "POST",
                f"/repos/{self.repository}/pulls",
                lambda: rest.async_create(
                    self.owner,
                    self.name,
                    title=title,
                    head=head if head_owner is None else label,
                    base=base,
                    body=body,
                    draft=as_draft,
                ),
                urgent=True,
            )
            created = response.parsed_data
            return PullRequestRef(
                created.number, created.html_url, created=True, draft=created.draft is True
            )

        async def open_or_update() -> PullRequestRef:
            found = await find()
            if found is None:
                try:
                    try:
                        return await create(draft)
                    except GitHubError as error:
                        if not (draft and _drafts_refused(error)):
                            raise
                        return dataclasses.replace(await create(False), draft_refused=True)
                except GitHubError as error:
                    # Raced with another attempt: it exists now, so update it below.
                    if error.status != 422 or "already exists" not in str(error):
                        raise
                    found = await find()
                    if found is None:
                        raise
            number, url, current, is_draft = found
            if current != body:
                await self._call(
                    "PATCH",
                    f"/repos/{self.repository}/pulls/{number}",
                    lambda: rest.async_update(self.owner, self.name, number, body=body),
                    urgent=True,
                )
            return PullRequestRef(number, url, created=False, draft=is_draft)

        return await self._retrying(open_or_update)


def _drafts_refused(error: GitHubError) -> bool:
    """GitHub's 422 for a draft where the plan allows none (a private repository, free plan)."""
    return error.status == 422 and "draft pull requests are not supported" in str(error).lower()
