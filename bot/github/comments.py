"""A thread's comments and reactions: the job's one progress comment, replies made
once, the bot's comments found again by their markers, 👀 on the trigger."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from githubkit_schemas.latest.models import IssueComment

from bot.github.markers import job_id_of, job_marker, reply_marker
from bot.github.repo_base import PAGE, RepoBase

if TYPE_CHECKING:
    from githubkit.response import Response

__all__ = ["Comments", "Reaction", "ReactionSubject"]

# What a reaction goes on: a comment, a review comment, or an issue or pull request.
ReactionSubject = Literal["comment", "review_comment", "issue"]
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


class Comments(RepoBase):
    """The comments of this repository's threads, and reactions."""

    async def react(
        self, kind: ReactionSubject, target_id: int, content: Reaction = "eyes"
    ) -> None:
        """React to the trigger: an issue comment, a review comment, or the issue itself."""
        rest = self._github.rest.reactions
        o, n = self.owner, self.name
        base = f"/repos/{self.repository}"
        call: Callable[[], Awaitable[Response[Any]]]
        if kind == "comment":
            path = f"{base}/issues/comments/{target_id}/reactions"

            def call() -> Awaitable[Response[Any]]:
                return rest.async_create_for_issue_comment(o, n, target_id, content=content)
        elif kind == "review_comment":
            path = f"{base}/pulls/comments/{target_id}/reactions"

            def call() -> Awaitable[Response[Any]]:
                return rest.async_create_for_pull_request_review_comment(
                    o,
                    n,
                    target_id,
                    content=content,
                )
        else:
            path = f"{base}/issues/{target_id}/reactions"

            def call() -> Awaitable[Response[Any]]:
                return rest.async_create_for_issue(o, n, target_id, content=content)

        # GitHub answers 200 for a reaction that is already there: retrying is safe.
        await self._retrying(lambda: self._call("POST", path, call))

    async def progress_comment(self, job_id: int | str, body: str) -> int:
        """The id of job `job_id`'s one comment on the thread, created with `body` if new.

        A comment of the bot's carrying the job's marker is reused as it is (a
        retried job); `body` should carry the marker, and gets it prepended if not.
        """
        key = str(job_id)
        if key in self._progress:
            return self._progress[key]
        marker = job_marker(job_id)
        text = body if marker in body else f"{marker}\n{body}"
        # The job's first word to the requester: urgent (`MutationSpacer`).
        comment_id = await self._find_or_create_comment(marker, text, urgent=True)
        self._progress[key] = comment_id
        return comment_id

    async def find_progress_comment(self, job_id: int | str) -> int | None:
        """The id of job `job_id`'s comment on the thread, if it made one; never creates it."""
        key = str(job_id)
        if key in self._progress:
            return self._progress[key]
        marker = job_marker(job_id)
        found = await self._retrying(lambda: self._find_comment(self.number, marker))
        if found is not None:
            self._progress[key] = found
        return found

    async def job_comment(
        self, job_id: int | str, number: int | None = None
    ) -> tuple[int, str] | None:
        """Job `job_id`'s comment on thread `number` (this one by default), as (id, body):
        the bot's comment whose first line is the job's marker. None if it has none."""
        key = str(job_id)
        bot = self._bot_comments(self.number if number is None else number)
        async with contextlib.aclosing(bot):
            async for comment_id, text in bot:
                if job_id_of(text) == key:
                    return comment_id, text
        return None

    async def update_progress(self, comment_id: int, body: str, *, urgent: bool = False) -> bool:
        """Edit the progress comment to `body`; False (no call) if it already says that.

        `urgent`: the report, which the requester waits for (`MutationSpacer`);
        a live edit is not.
        """
        if self._bodies.get(comment_id) == body:
            return False
        await self._retrying(
            lambda: self._call(
                "PATCH",
                f"/repos/{self.repository}/issues/comments/{comment_id}",
                lambda: self._github.rest.issues.async_update_comment(
                    self.owner, self.name, comment_id, body=body
                ),
                urgent=urgent,
            )
        )
        self._bodies[comment_id] = body
        return True

    async def reply_once(self, thread: int, key: str, body: str) -> int:
        """Post `body` on `thread` unless the bot already replied there for `key`; its id."""
        marker = reply_marker(key)
        text = body if marker in body else f"{marker}\n{body}"
        return await self._find_or_create_comment(marker, text, thread)

    async def _find_or_create_comment(
        self, marker: str, body: str, thread: int | None = None, *, urgent: bool = False
    ) -> int:
        number = self.number if thread is None else thread

        async def find_or_create() -> int:
            found = await self._find_comment(number, marker)
            if found is not None:
                return found
            response = await self._call(
                "POST",
                f"/repos/{self.repository}/issues/{number}/comments",
                lambda: self._github.rest.issues.async_create_comment(
                    self.owner, self.name, number, body=body
                ),
                urgent=urgent,
            )
            comment_id = int(response.parsed_data.id)
            self._bodies[comment_id] = body
            return comment_id

        return await self._retrying(find_or_create)

    async def _find_comment(self, number: int, marker: str) -> int | None:
        bot = self._bot_comments(number, retried=False)
        async with contextlib.aclosing(bot):
            async for comment_id, text in bot:
                if marker in text:
                    return comment_id
        return None

    async def _bot_comments(
        self, number: int, *, retried: bool = True
    ) -> AsyncGenerator[tuple[int, str], None]:
        """The bot's comments on thread `number`, oldest first, as (id, body); each body is
        remembered, so an edit to the same text makes no call."""
        pages = self._each_page(
            f"/repos/{self.repository}/issues/{number}/comments",
            functools.partial(
                self._github.rest.issues.async_list_comments,
                self.owner,
                self.name,
                number,
                per_page=PAGE,
            ),
            list[IssueComment],
            retried=retried,
        )
        async with contextlib.aclosing(pages):
            async for comments in pages:
                for comment in comments:
                    user = comment.user.login if comment.user else None
                    if user != self.bot_login:
                        continue
                    text = comment.body if isinstance(comment.body, str) else ""
                    self._bodies[int(comment.id)] = text
                    yield int(comment.id), text

    async def latest_progress_comment(
        self, number: int, *, unless: str | None = None
    ) -> tuple[int, str] | None:
        """The bot's newest job comment (progress, then report) on thread `number`, and
        its body; none that holds `unless` (a marker) counts."""
        found: tuple[int, str] | None = None
        bot = self._bot_comments(number)
        async with contextlib.aclosing(bot):
            async for comment_id, text in bot:
                if job_id_of(text) is not None and (unless is None or unless not in text):
                    found = (comment_id, text)
        return found
