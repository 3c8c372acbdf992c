"""A job's effects on GitHub: reactions, its one progress comment, replies, its draft PR.

One `Publisher` per job, over an installation client for one thread (issue or
pull request):

    publisher = await Publisher.for_installation(app, installation_id, "octo/hello", 12)
    await publisher.react("issue_comment", trigger_id)
    comment = await publisher.progress_comment(job.id, body)
    await publisher.update_progress(comment, report)
    pr = await publisher.open_or_update_pr("neo/issue-12", "main", title, description)

Every effect is idempotent (a job retried after a crash reuses what it made):
the progress comment and replies are found again by a hidden marker in a
comment by the App's bot user, a pull request by its head branch.

Transient failures are retried here, not by githubkit: the client handed in is
copied with githubkit's `auto_retry` off, because githubkit's retry sleeps
outside our control (no injectable sleep, no cap: a primary rate limit reset
an hour away would stall a worker for an hour), retries a secondary rate limit
only once, and would multiply attempts with ours. Ours retries 5xx, 429,
connection errors and 403 rate limits (GitHub's "secondary rate limit"
message, a `retry-after` header, or `x-ratelimit-remaining: 0`), waiting as
GitHub documents: `retry-after` seconds if present, else until
`x-ratelimit-reset` when nothing remains, else a minute for a secondary limit;
and exponentially longer on repeated failures. A wait longer than the cap, or
too many attempts, ends in GitHubError. Creations are retried together with
their lookup, so a POST that succeeded behind a 502 is found, not repeated.

Mutating calls (POST, PATCH, PUT, DELETE) of one installation are spaced at
least a second apart, GitHub's guidance against secondary rate limits, by a
`MutationSpacer` shared through a `Spacers` registry. Reads are not spaced.

Use it from one event loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast

import httpx
from githubkit import GitHub
from githubkit.exception import RequestError, RequestFailed, RequestTimeout

from runner.errors import NeoError
from runner.text import one_line

if TYPE_CHECKING:
    from githubkit.response import Response
    from githubkit_schemas.latest.models import (
        IssueComment,
        PullRequestReviewComment,
        PullRequestSimple,
        ReviewComment,
    )

    from bot.github.app import AppAuth

__all__ = [
    "DEFAULT_SPACERS",
    "DIFF_MEDIA_TYPE",
    "PERMISSION_LEVELS",
    "GitHubError",
    "MutationSpacer",
    "Publisher",
    "PullRequestRef",
    "Reaction",
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
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

PERMISSION_LEVELS: Final = ("admin", "maintain", "write", "triage", "read", "none")
MUTATING: Final = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# GitHub answers a pull request as its diff against the base for this media type.
DIFF_MEDIA_TYPE: Final = "application/vnd.github.diff"
_PAGE = 100
_MAX_MESSAGE = 200
_SECONDARY_WAIT = 60.0  # GitHub: "wait for at least one minute" when no header says how long


def job_marker(job_id: int | str) -> str:
    """The hidden marker that identifies a job's progress comment."""
    return f"<!-- neo:job={job_id} -->"


def reply_marker(key: str) -> str:
    """The hidden marker that identifies a one-off reply on a thread."""
    return f"<!-- neo:reply={key} -->"


def trigger_kind(event: str) -> TriggerKind:
    """The reaction target for a trigger's webhook event ("issue_comment.created", ...)."""
    name = event.partition(".")[0]
    if name == "issue_comment":
        return "issue_comment"
    if name == "pull_request_review_comment":
        return "review_comment"
    return "issue"


class GitHubError(NeoError):
    """A GitHub call failed for good: one line, status, method, path and GitHub's message."""

    kind = "github_error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class PullRequestRef:
    number: int
    url: str  # html_url
    created: bool  # False: an open PR with this head existed and was updated


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient failures are retried: attempts in all, backoff, the longest wait."""

    max_attempts: int = 5
    base_delay: float = 1.0  # doubled on every further attempt
    max_wait: float = 120.0  # a longer wait asked for by GitHub fails instead


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
    """One `MutationSpacer` per installation id, shared by all its Publishers."""

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


# The process's registry, for Publishers not given one.
DEFAULT_SPACERS: Final = Spacers()


# --- errors ------------------------------------------------------------------------


class _Transient(Exception):
    """A failure worth retrying after `wait` seconds (None: the backoff decides)."""

    def __init__(self, error: GitHubError, wait: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


def _github_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message.strip():
        return response.reason_phrase or "error"
    return one_line(message, _MAX_MESSAGE)


def _header_seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None


# --- the publisher -------------------------------------------------------------------


class Publisher:
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
        retry: RetryPolicy = RetryPolicy(),
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        now: Clock = time.time,
        permission_ttl: float = 60.0,
    ) -> None:
        owner, _, name = repository.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"repository must be 'owner/name', got {repository!r}")
        config = dataclasses.replace(client.config, auto_retry=None)
        self._github: GitHub[Any] = type(client)(client.auth, config=config)
        self.repository = repository
        self.owner, self.name = owner, name
        self.number = number
        self.bot_login = bot_login
        self._spacer = spacer or MutationSpacer()
        self._retry = retry
        self._sleep = sleep
        self._clock = clock
        self._now = now
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
        **options: Any,
    ) -> Publisher:
        """A Publisher acting as `installation_id` on `repository`, spaced with its peers."""
        client = await app.installation_client(installation_id, repository)
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
        clean = path.strip("/")

        async def read() -> Response[Any]:
            return await self._call(
                "GET",
                f"/repos/{self.repository}/contents/{clean}",
                lambda: (
                    self._github.rest.repos.async_get_content(self.owner, self.name, clean, ref=ref)
                    if ref
                    else self._github.rest.repos.async_get_content(self.owner, self.name, clean)
                ),
            )

        try:
            response = await self._retrying(read)
        except GitHubError as error:
            if error.status == 404:
                return None
            raise
        data = response.parsed_data
        if isinstance(data, list) or getattr(data, "type", None) != "file":
            return None
        if data.encoding != "base64":
            raise GitHubError(
                f"github: {clean} at {ref or 'the default branch'} is too large for the "
                "contents API"
            )
        try:
            raw = base64.b64decode(data.content)
        except (binascii.Error, ValueError):
            raise GitHubError(f"github: {clean} came back with undecodable content") from None
        return raw.decode("utf-8", errors="replace")

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

    async def review_comment(self, comment_id: int) -> PullRequestReviewComment:
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

    async def review_comments(self, review_id: int) -> list[ReviewComment]:
        """The inline comments of review `review_id` on this pull request (the first 100)."""
        response = await self._retrying(
            lambda: self._call(
                "GET",
                f"/repos/{self.repository}/pulls/{self.number}/reviews/{review_id}/comments",
                lambda: self._github.rest.pulls.async_list_comments_for_review(
                    self.owner, self.name, self.number, review_id, per_page=_PAGE
                ),
            )
        )
        return cast("list[ReviewComment]", response.parsed_data)

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
        page = 1
        while True:
            response = await self._call(
                "GET",
                f"/repos/{self.repository}/issues/{number}/comments",
                functools.partial(
                    self._github.rest.issues.async_list_comments,
                    self.owner,
                    self.name,
                    number,
                    per_page=_PAGE,
                    page=page,
                ),
            )
            # githubkit's generated `list[...]` annotation confuses mypy; name it again.
            comments = cast("list[IssueComment]", response.parsed_data)
            for comment in comments:
                user = comment.user.login if comment.user else None
                text = comment.body if isinstance(comment.body, str) else ""
                if user == self.bot_login and marker in text:
                    self._bodies[int(comment.id)] = text
                    return int(comment.id)
            if len(comments) < _PAGE:
                return None
            page += 1

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
        """
        owner = head_owner or self.owner
        label = f"{owner}:{head}"
        rest = self._github.rest.pulls

        async def find() -> tuple[int, str, str | None] | None:
            response = await self._call(
                "GET",
                f"/repos/{self.repository}/pulls",
                lambda: rest.async_list(self.owner, self.name, state="open", head=label),
            )
            for pull in cast("list[PullRequestSimple]", response.parsed_data):
                if pull.head.ref == head:
                    return pull.number, pull.html_url, pull.body
            return None

        async def open_or_update() -> PullRequestRef:
            found = await find()
            if found is None:
                try:
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
                            draft=draft,
                        ),
                    )
                except GitHubError as error:
                    # Raced with another attempt: it exists now, so update it below.
                    if error.status != 422 or "already exists" not in str(error):
                        raise
                    found = await find()
                    if found is None:
                        raise
                else:
                    created = response.parsed_data
                    return PullRequestRef(created.number, created.html_url, created=True)
            number, url, current = found
            if current != body:
                await self._call(
                    "PATCH",
                    f"/repos/{self.repository}/pulls/{number}",
                    lambda: rest.async_update(self.owner, self.name, number, body=body),
                )
            return PullRequestRef(number, url, created=False)

        return await self._retrying(open_or_update)

    # -- one call, and retrying --

    async def _call(self, method: str, path: str, request: Callable[[], Awaitable[R]]) -> R:
        """One attempt: spaced if it mutates; a failure becomes GitHubError or _Transient."""
        if method in MUTATING:
            await self._spacer.wait()
        try:
            return await request()
        except RequestFailed as failed:
            raise self._classify(method, path, failed.response.raw_response) from None
        except RequestTimeout:
            raise _Transient(
                GitHubError(f"github: {method} {path}: no answer in time"), None
            ) from None
        except RequestError as error:
            reason = type(error.exc).__name__
            raise _Transient(
                GitHubError(f"github: {method} {path}: cannot connect: {reason}"), None
            ) from None

    def _classify(self, method: str, path: str, response: httpx.Response) -> Exception:
        status = response.status_code
        message = _github_message(response)
        error = GitHubError(f"github {status} {method} {path}: {message}", status=status)
        headers = response.headers
        retry_after = _header_seconds(headers.get("retry-after"))
        exhausted = headers.get("x-ratelimit-remaining") == "0"
        secondary = "secondary rate limit" in message.lower()
        if status in (403, 429) and (retry_after is not None or exhausted or secondary):
            if retry_after is not None:
                return _Transient(error, retry_after)
            reset = _header_seconds(headers.get("x-ratelimit-reset"))
            if exhausted and reset is not None:
                return _Transient(error, max(reset - self._now(), 0.0))
            return _Transient(error, _SECONDARY_WAIT)
        if status >= 500 or status == 429:
            return _Transient(error, retry_after)
        return error

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        policy = self._retry
        for number in range(1, policy.max_attempts + 1):
            try:
                return await attempt()
            except _Transient as transient:
                backoff = policy.base_delay * 2 ** (number - 1)
                wait = backoff if transient.wait is None else max(transient.wait, backoff)
                if transient.wait is not None and transient.wait > policy.max_wait:
                    raise GitHubError(
                        f"{transient.error} (GitHub asks to wait {transient.wait:.0f} s)",
                        status=transient.error.status,
                    ) from None
                if number == policy.max_attempts:
                    raise transient.error from None
                await self._sleep(min(wait, policy.max_wait))
        raise AssertionError("unreachable")  # pragma: no cover
