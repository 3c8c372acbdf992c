"""The workflow's token standing in for the GitHub App, so the worker runs unchanged.

    async with TokenAuth(token, api_url="https://api.github.com") as auth:
        login = await auth.bot_login()  # github-actions[bot] for the workflow token
        client = await auth.installation_client(0, "octo/hello")

The worker asks the App for an installation's client and token on a
repository, and for its bot login. Here every answer comes from the one
token the workflow gave (its `GITHUB_TOKEN`, or a personal or App token):
the installation id and the permissions asked for are ignored, since the
workflow's `permissions:` decided them. Clients share one connection pool,
closed by `aclose`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType, TracebackType
from typing import Any, Final, Self

import httpx
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestFailed, RequestTimeout

from bot.action.inputs import InputError
from bot.github.app import Borrowed, InstallationToken, connection_pool
from bot.github.core import api_version
from bot.github.errors import GitHubAuthError

__all__ = ["WORKFLOW_BOT", "TokenAuth"]

# Who comments, pushes and opens pull requests with a workflow's GITHUB_TOKEN.
WORKFLOW_BOT: Final = "github-actions[bot]"
# A workflow token lives as long as its job, at most a day.
_LIFETIME = timedelta(hours=24)
# Answers to GET /user for a token that is not a user's: an installation's.
_NOT_A_USER = frozenset({403, 404})


class TokenAuth:
    """What the worker needs from a GitHub App, answered with one token.

    `api_url` is GITHUB_API_URL (`https://HOST/api/v3` on GitHub Enterprise Server).
    """

    def __init__(
        self,
        token: str,
        *,
        api_url: str = "https://api.github.com",
        timeout: float = 30.0,
        user_agent: str = "neo-action",
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
            try:
                response = await self._github.rest.users.async_get_authenticated()
                login = response.parsed_data.login
            except RequestFailed as error:
                status = error.response.status_code
                if status == 401:
                    raise InputError(
                        "input github_token: GitHub refused it (401); pass the workflow's "
                        "token or one that has not expired"
                    ) from None
                if status not in _NOT_A_USER:
                    raise GitHubAuthError(
                        f"github: GET /user answered {status} (check GITHUB_API_URL)",
                        status=status,
                    ) from None
                login = WORKFLOW_BOT
            except ValueError:  # pydantic's: not GitHub's shape
                raise GitHubAuthError(
                    "github: the answer to GET /user is not GitHub's (check GITHUB_API_URL)"
                ) from None
            except RequestTimeout:
                raise GitHubAuthError("github: no answer in time (check GITHUB_API_URL)") from None
            except GitHubException as error:
                raise GitHubAuthError(
                    f"github: cannot connect: {type(error).__name__} (check GITHUB_API_URL)"
                ) from None
            self._login = login
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
