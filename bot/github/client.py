"""One repository's reads and effects on GitHub, under one retry and spacing policy.

    client = await RepoClient.for_installation(app, installation_id, "octo/hello", 12)
    pr = await client.open_or_update_pr("neo/issue-12", "main", title, body)

Idempotency, retries, spacing, drafts: docs/architecture.md, "Talking to GitHub".
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast

from githubkit import GitHub
from githubkit.exception import GraphQLFailed
from githubkit_schemas.latest.models import (
    IssueComment,
    PullRequestReview,
    PullRequestReviewComment,
    PullRequestSimple,
    ReviewComment,
)

from bot.github.caller import DEFAULT_RETRY, Caller, Clock, Sleep
from bot.github.checks import Annotation, CheckRun, HeadCommit, PullHead
from bot.github.core import RetryPolicy
from bot.github.errors import GitHubError
from bot.github.graphql import RESOLVE_THREAD, REVIEW_THREADS, resolved_thread, review_threads
from bot.github.markers import job_id_of, job_marker, reply_marker
from bot.github.models import (
    Comment,
    FileRead,
    Issue,
    PullRequest,
    PullRequestRef,
    Review,
    ReviewThread,
    SubmittedReview,
    Thread,
)
from bot.github.models import (
    ReviewComment as InlineComment,
)

if TYPE_CHECKING:
    from githubkit.response import Response

    from bot.github.app import AppAuth

__all__ = [
    "DEFAULT_SPACERS",
    "DIFF_MEDIA_TYPE",
    "PERMISSION_LEVELS",
    "GitHubError",
    "LogKind",
    "MutationSpacer",
    "PullRequestRef",
    "Reaction",
    "RepoClient",
    "RetryPolicy",
    "Spacers",
    "TriggerKind",
    "job_marker",
    "reply_marker",
    "trigger_kind",
]

T = TypeVar("T")
R = TypeVar("R", bound="Response[Any, Any]")
TriggerKind = Literal["issue_comment", "review_comment", "issue"]
# A job's log (plain text), or a workflow run's logs (a ZIP).
LogKind = Literal["job", "run"]
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]

PERMISSION_LEVELS: Final = ("admin", "maintain", "write", "triage", "read", "none")
MUTATING: Final = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# GitHub answers a pull request as its diff against the base for this media type.
DIFF_MEDIA_TYPE: Final = "application/vnd.github.diff"
_PAGE = 100
# Pages of review threads read at most (100 each).
_THREAD_PAGES = 10


def trigger_kind(event: str) -> TriggerKind:
    """The reaction target for a trigger's webhook event ("issue_comment.created", ...)."""
    name = event.partition(".")[0]
    if name == "issue_comment":
        return "issue_comment"
    if name == "pull_request_review_comment":
        return "review_comment"
    return "issue"


# --- spacing of mutating calls ------------------------------------------------------


class MutationSpacer:
    """Starts of mutating calls of one installation at least `interval` seconds apart.

    Each caller reserves the next free slot and sleeps until it, so concurrent
    callers queue in order without holding a lock across the request.
    """

    def __init__(
        self, interval: float = 1.0, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")

    async def wait(self) -> float:
        """Wait for this call's slot; return how long it waited."""
        now = self._clock()
        start = max(now, self._next)
        self._next = start + self.interval
        delay = start - now
        if delay > 0:
            await self._sleep(delay)
        return delay


class Spacers:
    """One `MutationSpacer` per installation id, shared by all its RepoClients."""

    def __init__(
        self, interval: float = 1.0, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._spacers: dict[int, MutationSpacer] = {}

    def for_installation(self, installation_id: int) -> MutationSpacer:
        spacer = self._spacers.get(installation_id)
        if spacer is None:
            spacer = MutationSpacer(self.interval, clock=self._clock, sleep=self._sleep)
            self._spacers[installation_id] = spacer
        return spacer


# The process's registry, for RepoClients not given one.
DEFAULT_SPACERS: Final = Spacers()


# --- the client ----------------------------------------------------------------------


class RepoClient:
    """The effects of one job on one thread (`number`) of `repository` ("owner/name").

    `client` is an installation client (GitHubApp.installation_client); it is
    used through a copy with githubkit's own retry off. `bot_login` is the
    App's bot user (`<slug>[bot]`): only its comments are ever reused.
    `clock` (monotonic) ages the permission cache, `now` (epoch seconds) reads
    `x-ratelimit-reset`, `sleep` waits between retries; tests replace them.
    """

    def __init__(
        self,
        client: GitHub[Any],
        repository: str,
        number: int,
        *,
        bot_login: str,
        spacer: MutationSpacer | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        now: Clock = time.time,
        permission_ttl: float = 60.0,
    ) -> None:
        owner, _, name = repository.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"repository must be 'owner/name', got {repository!r}")
        self._caller = Caller(client, retry=retry, sleep=sleep, now=now)
        self._github = self._caller.github
        self.repository = repository
        self.owner, self.name = owner, name
        self.number = number
        self.bot_login = bot_login
        self._spacer = spacer or MutationSpacer()
        self._clock = clock
        self._permission_ttl = permission_ttl
        self._permissions: dict[str, tuple[str, float]] = {}
        self._default_branch: str | None = None
        self._progress: dict[str, int] = {}
        self._bodies: dict[int, str] = {}

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

    # -- reads --

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
                per_page=_PAGE,
            ),
            list[ReviewComment],
        )

    async def read_thread(self, *, pull_request: bool) -> Thread:
        """This thread: the issue (or PR), every comment oldest first, and the PR itself."""
        base = f"/repos/{self.repository}"
        rest = self._github.rest
        number = self.number
        issue = (
            await self._retrying(
                lambda: self._call(
                    "GET",
                    f"{base}/issues/{number}",
                    lambda: rest.issues.async_get(self.owner, self.name, number),
                )
            )
        ).parsed_data
        comments = await self._pages(
            f"{base}/issues/{number}/comments",
            functools.partial(
                rest.issues.async_list_comments, self.owner, self.name, number, per_page=_PAGE
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
            )
        opening = Issue(
            number=issue.number,
            title=issue.title,
            author=issue.user.login if issue.user else "ghost",
            association=_association(issue.author_association),
            body=issue.body if isinstance(issue.body, str) else "",
            created_at=str(issue.created_at),
        )
        return Thread(opening, tuple(_comment(c) for c in comments), pull)

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
            association=_association(review.author_association),
            body=review.body or "",
            submitted_at=str(review.submitted_at or ""),
        )

    async def read_review_comment(self, comment_id: int) -> InlineComment:
        """A pull request review comment, and where in the diff it points."""
        return _inline(await self._review_comment(comment_id))

    async def read_review_comments(self, review_id: int) -> tuple[InlineComment, ...]:
        """The inline comments of review `review_id` on this pull request, every page."""
        return tuple(_inline(c) for c in await self._review_comments(review_id))

    async def pull_review_comments(self) -> tuple[InlineComment, ...]:
        """Every inline comment of every review of this pull request, oldest first."""
        comments = await self._pages(
            f"/repos/{self.repository}/pulls/{self.number}/comments",
            functools.partial(
                self._github.rest.pulls.async_list_review_comments,
                self.owner,
                self.name,
                self.number,
                per_page=_PAGE,
            ),
            list[PullRequestReviewComment],
        )
        return tuple(_inline(c) for c in comments)

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
                    per_page=_PAGE,
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

    # -- review threads (GraphQL: REST neither tells outdated nor resolves) --

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

    # -- reactions --

    async def react(self, kind: TriggerKind, target_id: int, content: Reaction = "eyes") -> None:
        """React to the trigger: an issue comment, a review comment, or the issue itself."""
        rest = self._github.rest.reactions
        o, n = self.owner, self.name
        base = f"/repos/{self.repository}"
        call: Callable[[], Awaitable[Response[Any]]]
        if kind == "issue_comment":
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

    # -- comments --

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
        comment_id = await self._find_or_create_comment(marker, text)
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

    async def update_progress(self, comment_id: int, body: str) -> bool:
        """Edit the progress comment to `body`; False (no call) if it already says that."""
        if self._bodies.get(comment_id) == body:
            return False
        await self._retrying(
            lambda: self._call(
                "PATCH",
                f"/repos/{self.repository}/issues/comments/{comment_id}",
                lambda: self._github.rest.issues.async_update_comment(
                    self.owner, self.name, comment_id, body=body
                ),
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
        self, marker: str, body: str, thread: int | None = None
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
                per_page=_PAGE,
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

    # -- pull requests --

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
        answer says so (`draft` False).
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
                )
            return PullRequestRef(number, url, created=False, draft=is_draft)

        return await self._retrying(open_or_update)

    # -- checks and CI logs (CI repair) --

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
        )

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
            author_login=_login(data.author),
            committer_login=_login(data.committer),
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
                    per_page=_PAGE,
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
                    app=_text(getattr(run.app, "slug", None)),
                    title=_text(output.title),
                    summary=_text(output.summary),
                    text=_text(output.text),
                    annotations_count=int(output.annotations_count),
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
                    self.owner, self.name, check_run_id, per_page=min(limit, _PAGE)
                ),
            )
        )
        return tuple(
            Annotation(
                path=item.path,
                start_line=item.start_line,
                level=_text(item.annotation_level),
                title=_text(item.title),
                message=_text(item.message),
            )
            for item in response.parsed_data[:limit]
        )

    async def log_location(self, kind: LogKind, log_id: int) -> str:
        """Where GitHub keeps a job's log (plain text) or a run's logs (a ZIP): the
        short-lived URL its 302 names, to download without the token."""
        actions = self._redirecting.rest.actions
        if kind == "job":
            path = f"/repos/{self.repository}/actions/jobs/{log_id}/logs"
            ask = functools.partial(
                actions.async_download_job_logs_for_workflow_run, self.owner, self.name, log_id
            )
        else:
            path = f"/repos/{self.repository}/actions/runs/{log_id}/logs"
            ask = functools.partial(
                actions.async_download_workflow_run_logs, self.owner, self.name, log_id
            )
        response = await self._retrying(lambda: self._redirects.call("GET", path, ask))
        location = str(response.headers.get("location") or "")
        if response.status_code != 302 or not location:
            raise GitHubError(f"github: GET {path} gave no log location")
        return location

    async def latest_progress_comment(self, number: int) -> int | None:
        """The bot's newest job comment (progress, then report) on thread `number`."""
        found: int | None = None
        bot = self._bot_comments(number)
        async with contextlib.aclosing(bot):
            async for comment_id, text in bot:
                if job_id_of(text) is not None:
                    found = comment_id
        return found

    @functools.cached_property
    def _redirects(self) -> Caller:
        # The log routes answer 302 to another host: read the Location, never follow
        # it with the token.
        config = dataclasses.replace(self._github.config, follow_redirects=False)
        return Caller(type(self._github)(self._github.auth, config=config))

    @property
    def _redirecting(self) -> GitHub[Any]:
        return self._redirects.github

    # -- one call, pages, and retrying --

    async def _call(self, method: str, path: str, request: Callable[[], Awaitable[R]]) -> R:
        """One attempt: spaced if it mutates; a failure becomes GitHubError or Transient."""
        if method in MUTATING:
            await self._spacer.wait()
        return await self._caller.call(method, path, request)

    async def _each_page(
        self,
        path: str,
        first: Callable[[], Awaitable[Response[Any]]],
        model: type[list[T]],
        *,
        retried: bool = True,
    ) -> AsyncGenerator[list[T], None]:
        """The pages of a list (see `Caller.each_page`), as lists."""
        pages = self._caller.each_page(path, first, model, retried=retried)
        async with contextlib.aclosing(pages):
            async for response in pages:
                yield cast("list[T]", response.parsed_data)

    async def _pages(
        self, path: str, first: Callable[[], Awaitable[Response[Any]]], model: type[list[T]]
    ) -> list[T]:
        """Every item of a list, each page retried on its own."""
        return await self._caller.pages(path, first, model)

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        return await self._caller.retrying(attempt)


def _login(user: object) -> str | None:
    login = getattr(user, "login", None)
    return login if isinstance(login, str) and login else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _association(value: object) -> str:
    """GitHub's author_association; absent from some answers, where GitHub shows NONE."""
    return value if isinstance(value, str) and value else "NONE"


def _comment(item: Any) -> Comment:
    user = item.user
    return Comment(
        id=int(item.id),
        author=user.login if user else "ghost",
        author_id=int(user.id) if user else None,
        author_is_bot=bool(user and user.type == "Bot"),
        association=_association(item.author_association),
        body=item.body if isinstance(item.body, str) else "",
        created_at=str(item.created_at),
    )


def _inline(comment: PullRequestReviewComment | ReviewComment) -> InlineComment:
    """A review comment (either of githubkit's two shapes) and where it points."""

    def number(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    side = comment.side if isinstance(comment.side, str) else None
    return InlineComment(
        comment=_comment(comment),
        path=comment.path,
        line=number(comment.line) or number(comment.original_line),
        start_line=number(comment.start_line) or number(comment.original_start_line),
        side=side,
        diff_hunk=comment.diff_hunk,
        in_reply_to=number(comment.in_reply_to_id),
    )


def _drafts_refused(error: GitHubError) -> bool:
    """GitHub's 422 for a draft where the plan allows none (a private repository, free plan)."""
    return error.status == 422 and "draft pull requests are not supported" in str(error).lower()
