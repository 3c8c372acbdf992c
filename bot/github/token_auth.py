"""The workflow's token standing in for the GitHub App, so the worker runs unchanged.

    async with TokenAuth(token, api_url="https://api.github.com") as auth:
        login = await auth.bot_login()  # github-actions[bot] for the workflow token

docs/architecture.md, "Talking to GitHub".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import httpx
from githubkit import GitHub, TokenAuthStrategy

from bot.github.app import Borrowed, InstallationToken, connection_pool
from bot.github.caller import DEFAULT_RETRY, Caller, Clock, Sleep
from bot.github.core import RetryPolicy, api_version
from bot.github.errors import GitHubAuthError, GitHubError

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import PrivateUser, PublicUser

__all__ = ["WORKFLOW_BOT", "TokenAuth", "TokenRefused"]

# Who comments, pushes and opens pull requests with a workflow's GITHUB_TOKEN.
WORKFLOW_BOT: Final = "github-actions[bot]"
# A workflow token lives as long as its job, at most a day.
_LIFETIME = timedelta(hours=24)
# Answers to GET /user for a token that is not a user's: an installation's.
_NOT_A_USER = frozenset({403, 404})


class TokenRefused(GitHubAuthError):
    """GitHub refused the token itself (401): a mistake in the step's inputs."""


class TokenAuth:
    """What the worker needs from a GitHub App, answered with one token.

    `api_url` is GITHUB_API_URL (`https://HOST/api/v3` on GitHub Enterprise Server).
    `retry`, `sleep` and `now` are the retry policy and its clocks (tests replace them).
    """

    def __init__(
        self,
        token: str,
        *,
        api_url: str = "https://api.github.com",
        timeout: float = 30.0,
        user_agent: str = "neo-action",
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Sleep = asyncio.sleep,
        now: Clock = time.time,
    ) -> None:
        url = httpx.URL(api_url)
        self.api_url = str(url)
        self._token = token
        self._expires_at = datetime.now(UTC) + _LIFETIME
        self._pool = connection_pool(url, max_connections=20)
        self._github: GitHub[TokenAuthStrategy] = GitHub(
            TokenAuthStrategy(token),
            base_url=url,
            user_agent=user_agent,
            timeout=timeout,
            async_transport=Borrowed(self._pool, api_version(url)),
            http_cache=False,
            # One retry policy, bot.github.core's (RepoClient's): githubkit's is off.
            auto_retry=False,
        )
        self._caller = Caller(self._github, retry=retry, sleep=sleep, now=now)
        self._login: str | None = None

    def __repr__(self) -> str:
        return f"TokenAuth(api_url={self.api_url!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def bot_login(self) -> str:
        """Who the token acts as: a user token's login, else `github-actions[bot]`.

        GitHub answers GET /user for a user's token only; for the workflow's
        token (an installation's) it says 403, and comments made with it are
        by github-actions[bot].
        """
        if self._login is None:
            caller = self._caller

            async def ask() -> PrivateUser | PublicUser | None:
                try:
                    response = await caller.call(
                        "GET", "/user", caller.github.rest.users.async_get_authenticated
                    )
                except GitHubError as error:
                    # Refused for good, not a rate limit given up on: not a user's token.
                    if error.status in _NOT_A_USER:
                        return None
                    raise
                return response.parsed_data

            try:
                user = await caller.retrying(ask)
            except GitHubError as error:
                if error.status == 401:
                    raise TokenRefused(
                        "input github_token: GitHub refused it (401); pass the workflow's "
                        "token or one that has not expired"
                    ) from None
                # A rate limit's message says all; anything else may be the wrong API.
                hint = "" if error.status in (403, 429) else " (check GITHUB_API_URL)"
                raise GitHubAuthError(f"{error}{hint}", status=error.status) from None
            except ValueError:  # pydantic's: not GitHub's shape
                raise GitHubAuthError(
                    "github: the answer to GET /user is not GitHub's (check GITHUB_API_URL)"
                ) from None
            self._login = WORKFLOW_BOT if user is None else user.login
        return self._login

    async def installation_token(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> InstallationToken:
        """The workflow's token, whatever installation and permissions are asked for."""
        return InstallationToken(
            token=self._token,
            expires_at=self._expires_at,
            repository=repository,
            permissions=MappingProxyType(dict(permissions or {})),
        )

    async def installation_client(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> GitHub[Any]:
        """A client with the workflow's token; nothing to close (it uses the pool)."""
        return self._github
