"""One repository's reads and effects on GitHub, under one retry and spacing policy.

    client = await RepoClient.for_installation(app, installation_id, "octo/hello", 12)
    pr = await client.open_or_update_pr("neo/issue-12", "main", title, body)

`RepoClient` is the facade over the resources of a repository, each a module
of its own over `RepoBase` (how a call is made): `pulls`, `reviews`,
`comments`, `checks`, `issues` (any by number), and the CI logs of
`downloads`; it holds the reads of the repository itself (a user's role,
the default branch, files).
Idempotency, retries, spacing, drafts: docs/architecture.md, "Talking to GitHub".
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from bot.github.attachments import (
    DEFAULT_LIMITS,
    Attachment,
    AttachmentLimits,
    Skipped,
    attachment_sources,
    download_attachments,
    web_origin,
)
from bot.github.caller import DEFAULT_RETRY
from bot.github.checks import Checks
from bot.github.comments import Comments, Reaction, ReactionSubject
from bot.github.core import RetryPolicy
from bot.github.downloads import LogKind, Logs
from bot.github.errors import GitHubError
from bot.github.issues import Issues
from bot.github.markers import job_marker, reply_marker
from bot.github.models import FileRead, PullRequestRef, ReadPlan, Review, ThreadRead, TriggerRead
from bot.github.models import ReviewComment as InlineComment
from bot.github.pulls import DIFF_MEDIA_TYPE, Pulls
from bot.github.reviews import Reviews
from bot.github.spacing import DEFAULT_SPACERS, MutationSpacer, Spacers

if TYPE_CHECKING:
    from githubkit.response import Response

    from bot.github.app import AppAuth

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_SPACERS",
    "DIFF_MEDIA_TYPE",
    "PERMISSION_LEVELS",
    "GitHubError",
    "LogKind",
    "MutationSpacer",
    "PullRequestRef",
    "Reaction",
    "ReactionSubject",
    "RepoClient",
    "RetryPolicy",
    "Spacers",
    "job_marker",
    "reply_marker",
]

PERMISSION_LEVELS: Final = ("admin", "maintain", "write", "triage", "read", "none")


class RepoClient(Pulls, Reviews, Comments, Checks, Logs, Issues):
    """The effects of one job on one thread (`number`) of `repository` ("owner/name")."""

    def attachments_in(self, body_html: str) -> list[str]:
        """The attachment images of a post GitHub rendered as `body_html`."""
        return attachment_sources(body_html, web_origin(str(self._github.config.base_url)))

    async def attached_images(
        self, urls: Sequence[str], limits: AttachmentLimits = DEFAULT_LIMITS
    ) -> list[Attachment | Skipped]:
        """`urls` (from `attachments_in`) downloaded within `limits`; no token goes
        with them: their addresses are signed."""
        return await download_attachments(urls, limits=limits)

    async def read_for(self, plan: ReadPlan) -> TriggerRead:
        """This thread as a job's trigger needs it (`plan`): its reads made together.

        A diff or a review GitHub does not give is said in the answer
        (`diff_missing`, `review_missing`): context, not the work. Any other
        failure is raised once every read has ended.
        """

        async def diff() -> tuple[str | None, str | None]:
            if not plan.diff:
                return None, None
            try:
                return await self.pull_request_diff(), None
            except GitHubError as error:
                return None, f"GitHub did not give it ({error})"

        async def review() -> tuple[Review | None, str | None]:
            if plan.review is None or not plan.review_body:
                return None, None
            try:
                return await self.read_review(plan.review), None
            except GitHubError as error:
                return None, str(error)

        async def earlier() -> tuple[InlineComment, ...]:
            return await self.pull_review_comments() if plan.earlier else ()

        async def review_comment() -> InlineComment | None:
            if plan.review_comment is None:
                return None
            return await self.read_review_comment(plan.review_comment)

        async def review_comments() -> tuple[InlineComment, ...]:
            return () if plan.review is None else await self.read_review_comments(plan.review)

        reads = await asyncio.gather(
            self.read_thread(pull_request=plan.pull_request),
            diff(),
            earlier(),
            review_comment(),
            review(),
            review_comments(),
            return_exceptions=True,
        )
        for result in reads:
            if isinstance(result, BaseException):
                raise result
        thread, (text, missing), before, inline, (found, review_missing), comments = cast(
            "tuple[ThreadRead, tuple[str | None, str | None], tuple[InlineComment, ...],"
            " InlineComment | None, tuple[Review | None, str | None],"
            " tuple[InlineComment, ...]]",
            tuple(reads),
        )
        return TriggerRead(
            thread=thread,
            diff=text,
            diff_missing=missing,
            earlier=before,
            review_comment=inline,
            review=found,
            review_missing=review_missing,
            review_comments=comments,
        )

    @classmethod
    async def for_installation(
        cls,
        app: AppAuth,
        installation_id: int,
        repository: str,
        number: int,
        *,
        spacers: Spacers = DEFAULT_SPACERS,
        permissions: Mapping[str, str] | None = None,
        **options: Any,
    ) -> RepoClient:
        """A RepoClient acting as `installation_id` on `repository`, spaced with its peers;
        its token has `permissions` (None: a job's)."""
        client = await app.installation_client(installation_id, repository, permissions)
        return cls(
            client,
            repository,
            number,
            bot_login=await app.bot_login(),
            spacer=spacers.for_installation(installation_id),
            **options,
        )

    async def permission(self, login: str) -> str:
        """`login`'s role on the repository: admin, maintain, write, triage, read or none."""
        key = login.lower()
        cached = self._permissions.get(key)
        if cached is not None and self._clock() < cached[1]:
            return cached[0]
        path = f"/repos/{self.repository}/collaborators/{login}/permission"

        async def ask() -> str:
            try:
                response = await self._call(
                    "GET",
                    path,
                    lambda: self._github.rest.repos.async_get_collaborator_permission_level(
                        self.owner, self.name, login
                    ),
                )
            except GitHubError as error:
                if error.status == 404:  # not a user at all: no access
                    return "none"
                raise
            data = response.parsed_data
            role = data.role_name
            # A custom repository role has its own name; its base level is `permission`.
            return role if role in PERMISSION_LEVELS else data.permission

        level = await self._retrying(ask)
        self._permissions[key] = (level, self._clock() + self._permission_ttl)
        return level

    async def default_branch(self) -> str:
        """The repository's default branch (asked once)."""
        if self._default_branch is None:
            response = await self._retrying(
                lambda: self._call(
                    "GET",
                    f"/repos/{self.repository}",
                    lambda: self._github.rest.repos.async_get(self.owner, self.name),
                )
            )
            self._default_branch = response.parsed_data.default_branch
        return self._default_branch

    async def read_file(self, path: str, ref: str | None = None) -> str | None:
        """The text of `path` at `ref` (the default branch when None); None if absent.

        A directory, symlink or submodule at `path` is not a file: None too.
        """
        return (await self.read_file_if_changed(path, ref)).text

    async def read_file_if_changed(
        self, path: str, ref: str | None = None, etag: str | None = None
    ) -> FileRead:
        """`read_file` as a conditional request: GitHub answers 304 if `etag` still holds.

        A 304 costs no rate limit; it comes back as `modified=False`, no text.
        """
        clean = path.strip("/")
        headers = {"If-None-Match": etag} if etag else {}
        contents = self._github.rest.repos.async_get_content

        async def read() -> Response[Any]:
            return await self._call(
                "GET",
                f"/repos/{self.repository}/contents/{clean}",
                lambda: (
                    contents(self.owner, self.name, clean, ref=ref, headers=headers)
                    if ref
                    else contents(self.owner, self.name, clean, headers=headers)
                ),
            )

        try:
            response = await self._retrying(read)
        except GitHubError as error:
            if error.status == 404:
                return FileRead(None, None)
            raise
        if response.status_code == 304:
            return FileRead(None, etag, modified=False)
        new_etag = response.headers.get("etag")
        data = response.parsed_data
        if isinstance(data, list) or getattr(data, "type", None) != "file":
            return FileRead(None, new_etag)
        if data.encoding != "base64":
            raise GitHubError(
                f"github: {clean} at {ref or 'the default branch'} is too large for the "
                "contents API"
            )
        try:
            raw = base64.b64decode(data.content)
        except (binascii.Error, ValueError):
            raise GitHubError(f"github: {clean} came back with undecodable content") from None
        return FileRead(raw.decode("utf-8", errors="replace"), new_etag)
