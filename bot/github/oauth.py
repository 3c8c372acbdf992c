"""Signing people in with the App's OAuth web flow, and what Neo asks GitHub as them.

    users = GitHubUsers(api_url=..., web_url=..., client_id=..., client_secret=...)
    url = users.authorize_url(redirect_uri, state)      # the browser goes there
    token = await users.exchange(code, redirect_uri)    # GitHub sent it back with a code
    login = await users.login(token)
    role = await users.role(token, "octo/hello")        # None: they cannot see it

The web flow's two endpoints are on GitHub's web host (`NEO_GITHUB_WEB_URL`),
not the API: they are called here with httpx, as githubkit would derive that
host from the API URL itself. What follows is REST, through githubkit, with
the user's token. The token is a credential: it is never in an error, a repr
or a log line. One attempt per call: a page load is retried by its reader.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

import httpx
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestError, RequestFailed, RequestTimeout

from bot.github.app import Borrowed, connection_pool
from bot.github.core import api_version, classify, connection_failure, github_message
from bot.github.errors import GitHubError

__all__ = [
    "AUTHORIZE_PATH",
    "EXCHANGE_PATH",
    "GitHubUsers",
    "SignInRefused",
    "UserToken",
    "answered",
    "role_of",
]

AUTHORIZE_PATH: Final = "/login/oauth/authorize"
EXCHANGE_PATH: Final = "/login/oauth/access_token"

# The roles of `bot.github.client.RepoClient.permission`, strongest first, as a
# repository's `permissions` object (GET /repos/{owner}/{repo}, as the user) spells them.
_ROLES: Final = (
    ("admin", "admin"),
    ("maintain", "maintain"),
    ("push", "write"),
    ("triage", "triage"),
    ("pull", "read"),
)


class SignInRefused(GitHubError):
    """GitHub refused the code: spent, expired, or not this App's; `error` is GitHub's word."""

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message, status=None)
        self.error = error


@dataclass(frozen=True, slots=True)
class UserToken:
    """A user access token: it acts as the user, within what the App may do."""

    token: str = field(repr=False)
    # Unix time GitHub says it expires; None: it does not (expiry turned off for the App).
    expires_at: float | None


def role_of(permissions: object) -> str:
    """The strongest role a repository's `permissions` object grants: admin … read, or none."""
    for key, role in _ROLES:
        if getattr(permissions, key, False) is True:
            return role
    return "none"


class GitHubUsers:
    """The App's OAuth client (its client id and secret) and REST calls as a signed-in user."""

    def __init__(
        self,
        *,
        api_url: str,
        web_url: str,
        client_id: str,
        client_secret: str,
        timeout: float = 15.0,
        clock: Any = time.time,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.web_url = web_url.rstrip("/")
        self.client_id = client_id
        self._client_secret = client_secret
        self._timeout = timeout
        self._clock = clock
        api = httpx.URL(self.api_url)
        self._api_pool = connection_pool(api, max_connections=20)
        self._api_version = api_version(api)
        self._web = httpx.AsyncClient(
            transport=connection_pool(httpx.URL(self.web_url), max_connections=10),
            timeout=timeout,
            headers={"User-Agent": "neo-run-page", "Accept": "application/json"},
        )

    def __repr__(self) -> str:
        return f"GitHubUsers(web_url={self.web_url!r}, client_id={self.client_id!r})"

    async def aclose(self) -> None:
        await self._web.aclose()
        await self._api_pool.aclose()

    # -- the web flow --

    def authorize_url(self, redirect_uri: str, state: str) -> str:
        """Where the browser asks the user to let the App know who they are."""
        query = urlencode(
            {"client_id": self.client_id, "redirect_uri": redirect_uri, "state": state}
        )
        return f"{self.web_url}{AUTHORIZE_PATH}?{query}"

    async def exchange(self, code: str, redirect_uri: str) -> UserToken:
        """The user's token for the code GitHub's redirect carried (it works once).

        Raises SignInRefused for GitHub's refusal (its `error`), GitHubError
        for anything else. The refresh token GitHub may add is not kept: a
        session ends before its token does, and signing in again is one redirect.
        """
        form = {
            "client_id": self.client_id,
            "client_secret": self._client_secret,
            "code": code,
            "redirect_uri": redirect_uri,
        }
        try:
            response = await self._web.post(f"{self.web_url}{EXCHANGE_PATH}", data=form)
        except httpx.TimeoutException:
            raise connection_failure("POST", EXCHANGE_PATH, None).error from None
        except httpx.HTTPError as error:
            raise connection_failure("POST", EXCHANGE_PATH, type(error).__name__).error from None
        if response.status_code != 200:
            message = github_message(response.content, response.reason_phrase)
            raise GitHubError(
                f"github {response.status_code} POST {EXCHANGE_PATH}: {message}",
                status=response.status_code,
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise GitHubError(f"github: the answer to POST {EXCHANGE_PATH} is not GitHub's")
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            word = str(data.get("error") or "no_token")[:60]
            said = str(data.get("error_description") or "no token in the answer")[:200]
            raise SignInRefused(f"github: POST {EXCHANGE_PATH}: {word}: {said}", error=word)
        lifetime = data.get("expires_in")
        expires = (
            self._clock() + float(lifetime)
            if isinstance(lifetime, int | float) and not isinstance(lifetime, bool)
            else None
        )
        return UserToken(token, expires)

    # -- REST, as the user --

    async def login(self, token: UserToken) -> str:
        """The signed-in user's login (GET /user)."""
        async with self._as(token, "GET", "/user") as github:
            user = (await github.rest.users.async_get_authenticated()).parsed_data
        return user.login

    async def role(self, token: UserToken, repository: str) -> str | None:
        """The user's role on `repository` ("owner/name"), from what GitHub shows them
        (GET /repos/{owner}/{repo}); None when they cannot see it (404, 403)."""
        owner, _, name = repository.partition("/")
        try:
            async with self._as(token, "GET", "/repos/{owner}/{repo}") as github:
                repo = (await github.rest.repos.async_get(owner, name)).parsed_data
        except GitHubError as error:
            if error.status in (403, 404):
                return None
            raise
        return role_of(repo.permissions) if repo.permissions else "read"

    @asynccontextmanager
    async def _as(self, token: UserToken, method: str, path: str) -> AsyncIterator[GitHub[Any]]:
        github = GitHub(
            TokenAuthStrategy(token.token),
            base_url=self.api_url,
            user_agent="neo-run-page",
            timeout=self._timeout,
            async_transport=Borrowed(self._api_pool, self._api_version),
            auto_retry=False,
            http_cache=False,
        )
        async with answered(method, path, self._clock):
            yield github


@asynccontextmanager
async def answered(method: str, path: str, clock: Any = time.time) -> AsyncIterator[None]:
    """githubkit's failures inside as one GitHubError line (its status, no credential)."""
    try:
        yield
    except RequestFailed as failed:
        raw = failed.response.raw_response
        decision = classify(method, path, raw.status_code, raw.headers, raw.content, now=clock())
        raise (decision if isinstance(decision, GitHubError) else decision.error) from None
    except RequestTimeout:
        raise connection_failure(method, path, None).error from None
    except RequestError as error:
        raise connection_failure(method, path, type(error.exc).__name__).error from None
    except GitHubException as error:
        raise GitHubError(f"github: {method} {path}: {type(error).__name__}") from None
    except ValueError:  # pydantic's: not GitHub's shape
        raise GitHubError(f"github: the answer to {method} {path} is not GitHub's") from None
