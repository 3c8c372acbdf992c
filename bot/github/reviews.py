"""A pull request's reviews: reading them and their inline comments, the one review a
job submits, replies in review threads, and the threads (GraphQL: REST neither
tells outdated nor resolves)."""

from __future__ import annotations

import functools
from typing import Any, Final, cast

from githubkit.exception import GraphQLFailed
from githubkit_schemas.latest.models import (
    PullRequestReview,
    PullRequestReviewComment,
    ReviewComment,
)

from bot.github.errors import GitHubError
from bot.github.graphql import RESOLVE_THREAD, REVIEW_THREADS, resolved_thread, review_threads
from bot.github.markers import reply_marker
from bot.github.models import Review, ReviewThread, SubmittedReview
from bot.github.models import ReviewComment as InlineComment
from bot.github.repo_base import PAGE, RepoBase, association_of, inline_of

__all__ = ["Reviews"]

# Pages of review threads read at most (100 each).
_THREAD_PAGES: Final = 10


class Reviews(RepoBase):
    """The reviews of this thread's pull request."""

    async def _review_comment(self, comment_id: int) -> PullRequestReviewComment:
        """A pull request review comment: its file, lines and diff hunk."""
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/pulls/comments/{comment_id}",
                lambda: self._github.rest.pulls.async_get_review_comment(
                    self.owner, self.name, comment_id
                ),
            )
        )
        return response.parsed_data

    async def _review_comments(self, review_id: int) -> list[ReviewComment]:
        """The inline comments of review `review_id` on this pull request, every page."""
        return await self._pages(
            f"/repos/{self.repository}/pulls/{self.number}/reviews/{review_id}/comments",
            functools.partial(
                self._github.rest.pulls.async_list_comments_for_review,
                self.owner,
                self.name,
                self.number,
                review_id,
                per_page=PAGE,
            ),
            list[ReviewComment],
        )

    async def read_review(self, review_id: int) -> Review:
        """Review `review_id` of this pull request: who submitted it, and its body."""
        path = f"/repos/{self.repository}/pulls/{self.number}/reviews/{review_id}"
        response = await self._retrying(
            lambda: self._call(
                "GET",
                path,
                lambda: self._github.rest.pulls.async_get_review(
                    self.owner, self.name, self.number, review_id
                ),
            )
        )
        review = response.parsed_data
        return Review(
            id=int(review.id),
            author=review.user.login if review.user else "ghost",
            association=association_of(review.author_association),
            body=review.body or "",
            submitted_at=str(review.submitted_at or ""),
        )

    async def read_review_comment(self, comment_id: int) -> InlineComment:
        """A pull request review comment, and where in the diff it points."""
        return inline_of(await self._review_comment(comment_id))

    async def read_review_comments(self, review_id: int) -> tuple[InlineComment, ...]:
        """The inline comments of review `review_id` on this pull request, every page."""
        return tuple(inline_of(c) for c in await self._review_comments(review_id))

    async def pull_review_comments(self) -> tuple[InlineComment, ...]:
        """Every inline comment of every review of this pull request, oldest first."""
        comments = await self._pages(
            f"/repos/{self.repository}/pulls/{self.number}/comments",
            functools.partial(
                self._github.rest.pulls.async_list_review_comments,
                self.owner,
                self.name,
                self.number,
                per_page=PAGE,
            ),
            list[PullRequestReviewComment],
        )
        return tuple(inline_of(c) for c in comments)

    async def submit_review(
        self, key: str, body: str, comments: list[dict[str, object]]
    ) -> SubmittedReview:
        """One review of this pull request, event COMMENT, unless the bot's review for
        `key` is already there (a retried job): the hidden marker finds it."""
        marker = reply_marker(key)
        text = f"{marker}\n{body}"
        path = f"/repos/{self.repository}/pulls/{self.number}/reviews"

        async def find() -> SubmittedReview | None:
            reviews = await self._pages(
                path,
                functools.partial(
                    self._github.rest.pulls.async_list_reviews,
                    self.owner,
                    self.name,
                    self.number,
                    per_page=PAGE,
                ),
                list[PullRequestReview],
            )
            for review in reviews:
                user = review.user.login if review.user else None
                if user == self.bot_login and marker in (review.body or ""):
                    return SubmittedReview(id=int(review.id), url=review.html_url)
            return None

        async def find_or_create() -> SubmittedReview:
            found = await find()
            if found is not None:
                return found
            # Never APPROVE nor REQUEST_CHANGES: Neo's review informs, a human decides.
            data = {"body": text, "event": "COMMENT", "comments": comments}
            response = await self._call(
                "POST",
                path,
                lambda: self._github.rest.pulls.async_create_review(
                    self.owner, self.name, self.number, data=cast("Any", data)
                ),
            )
            review = response.parsed_data
            return SubmittedReview(id=int(review.id), url=review.html_url)

        return await self._retrying(find_or_create)

    async def reply_in_thread(self, comment_id: int, key: str, body: str) -> int:
        """Reply `body` in the review thread that starts with comment `comment_id`,
        unless the bot's reply for `key` is already there (a retried job); its id."""
        marker = reply_marker(key)
        text = body if marker in body else f"{marker}\n{body}"
        path = f"/repos/{self.repository}/pulls/{self.number}/comments/{comment_id}/replies"

        async def find() -> int | None:
            for comment in await self.pull_review_comments():
                if comment.comment.author == self.bot_login and marker in comment.comment.body:
                    return comment.comment.id
            return None

        async def find_or_create() -> int:
            found = await find()
            if found is not None:
                return found
            response = await self._call(
                "POST",
                path,
                lambda: self._github.rest.pulls.async_create_reply_for_review_comment(
                    self.owner, self.name, self.number, comment_id, body=text
                ),
            )
            return int(response.parsed_data.id)

        return await self._retrying(find_or_create)

    async def _graphql(self, name: str, document: str, variables: dict[str, Any]) -> Any:
        """One GraphQL operation, retried as a REST call; GitHub's `errors` are a GitHubError."""
        mutates = document.lstrip().startswith("mutation")

        async def attempt() -> Any:
            if mutates:
                await self._spacer.wait()
            try:
                return await self._caller.call(
                    "POST",
                    f"/graphql ({name})",
                    lambda: self._github.async_graphql(document, variables),
                )
            except GraphQLFailed as failed:
                errors = failed.response.errors or []
                said = errors[0].message if errors else "an error"
                raise GitHubError(f"github: GraphQL {name} failed: {said}") from None

        return await self._retrying(attempt)

    async def review_threads(self) -> tuple[ReviewThread, ...]:
        """This pull request's review threads, oldest first, each by its first comment."""
        threads: list[ReviewThread] = []
        after: str | None = None
        # A bound: a cursor that never ends must not loop for ever.
        for _ in range(_THREAD_PAGES):
            variables = {"owner": self.owner, "name": self.name, "number": self.number}
            variables["after"] = after
            page = review_threads(await self._graphql("reviewThreads", REVIEW_THREADS, variables))
            threads.extend(page.threads)
            after = page.after
            if after is None:
                break
        return tuple(threads)

    async def resolve_thread(self, thread_id: str) -> None:
        """Mark review thread `thread_id` resolved; resolving it again changes nothing."""
        variables = {"threadId": thread_id}
        resolved_thread(await self._graphql("resolveReviewThread", RESOLVE_THREAD, variables))
