"""What the resources of one repository share: who it is, its state, and how a call
is made (one attempt, spaced if it mutates; pages; the retry loop), and GitHub's
answers read into Neo's values."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from githubkit import GitHub
from githubkit_schemas.latest.models import PullRequestReviewComment, ReviewComment

from bot.github.caller import DEFAULT_RETRY, Caller, Clock, Sleep
from bot.github.core import RetryPolicy
from bot.github.models import Comment
from bot.github.models import ReviewComment as InlineComment
from bot.github.spacing import MUTATING, MutationSpacer

if TYPE_CHECKING:
    from githubkit.response import Response

__all__ = [
    "PAGE",
    "RepoBase",
    "association_of",
    "comment_of",
    "inline_of",
    "login_of",
    "text_of",
]

T = TypeVar("T")
R = TypeVar("R", bound="Response[Any, Any]")
# Items asked for per page of a list.
PAGE: Final = 100


class RepoBase:
    """One thread (`number`) of `repository` ("owner/name"), as every resource of it calls GitHub.

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

    # -- one call, pages, and retrying --

    async def _call(
        self,
        method: str,
        path: str,
        request: Callable[[], Awaitable[R]],
        *,
        urgent: bool = False,
    ) -> R:
        """One attempt: spaced if it mutates (`urgent`: what the requester waits
        for, `MutationSpacer` says); a failure becomes GitHubError or Transient."""
        if method in MUTATING:
            await self._spacer.wait(urgent=urgent)
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


def login_of(user: object) -> str | None:
    login = getattr(user, "login", None)
    return login if isinstance(login, str) and login else None


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def association_of(value: object) -> str:
    """GitHub's author_association; absent from some answers, where GitHub shows NONE."""
    return value if isinstance(value, str) and value else "NONE"


def comment_of(item: Any) -> Comment:
    user = item.user
    return Comment(
        id=int(item.id),
        author=user.login if user else "ghost",
        author_id=int(user.id) if user else None,
        author_is_bot=bool(user and user.type == "Bot"),
        association=association_of(item.author_association),
        body=item.body if isinstance(item.body, str) else "",
        created_at=str(item.created_at),
        body_html=text_of(getattr(item, "body_html", None)),
    )


def inline_of(comment: PullRequestReviewComment | ReviewComment) -> InlineComment:
    """A review comment (either of githubkit's two shapes) and where it points."""

    def number(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    side = comment.side if isinstance(comment.side, str) else None
    return InlineComment(
        comment=comment_of(comment),
        path=comment.path,
        line=number(comment.line) or number(comment.original_line),
        start_line=number(comment.start_line) or number(comment.original_start_line),
        side=side,
        diff_hunk=comment.diff_hunk,
        in_reply_to=number(comment.in_reply_to_id),
    )
