"""GitHub App authentication: the App's JWT, installation tokens, and the process's HTTP pool.

    async with GitHubApp(app_id, load_private_key(key, key_path), api_url) as app:
        github = await app.installation_client(installation_id, "octo/hello")

Token scopes and caching, `AppAuth`: docs/architecture.md, "Talking to GitHub".
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
import urllib.request
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Mapping,
)
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, Self, TypeVar, cast

import httpx
from githubkit import AppAuthStrategy, BaseAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException, RequestError, RequestFailed, RequestTimeout
from githubkit.utils import Unset
from pydantic import SecretStr

from bot.github.caller import DEFAULT_RETRY
from bot.github.core import (
    DEFAULT_API_URL,
    Retry,
    RetryPolicy,
    api_version,
    classify,
    github_message,
    retry_wait,
)
from bot.github.errors import GitHubAuthError, GitHubError
from bot.github.signing import KEY_SETTINGS, AppKeyStrategy, signing_key
from runner.connection import Endpoint, describe, proxy_for, request_url
from runner.errors import ConfigError
from runner.setting_file import read_setting_file

if TYPE_CHECKING:
    from githubkit import GitHubCore
    from githubkit_schemas.latest.types import AppPermissionsType

__all__ = [
    "CI_REPAIR_PERMISSIONS",
    "CONFIG_PERMISSIONS",
    "JOB_PERMISSIONS",
    "REFRESH_MARGIN",
    "WORKFLOW_JOB_PERMISSIONS",
    "AppAuth",
    "AppSettings",
    "Borrowed",
    "GitHubApp",
    "GitHubAuthError",
    "InstallationAuth",
    "InstallationToken",
    "connection_pool",
    "load_private_key",
    "signed_in_app",
]


# A token is renewed this long before GitHub says it expires, so a request
# started with it never reaches GitHub with an expired one.
REFRESH_MARGIN: Final = timedelta(minutes=1)

_CREDENTIALS = "check NEO_GITHUB_APP_ID and NEO_GITHUB_PRIVATE_KEY"
# How the App's own calls name themselves, and how long each may take.
_USER_AGENT = "neo-github-app"
_TIMEOUT = 30.0
_R = TypeVar("_R")


def _job_permissions() -> AppPermissionsType:
    # What a job does: push a branch, comment, open a pull request. Nothing more.
    return {"contents": "write", "issues": "write", "pull_requests": "write", "metadata": "read"}


JOB_PERMISSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {name: str(level) for name, level in _job_permissions().items()}
)

# A job of a repository whose `.github/neo.yml` sets `allow_workflow_edits`:
# GitHub refuses a push that touches `.github/workflows/` without `workflows`.
WORKFLOW_JOB_PERMISSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {**JOB_PERMISSIONS, "workflows": "write"}
)

# A CI repair also reads the failed checks and their Actions logs. Asked only by
# repair jobs: an installation whose owner has not yet accepted these two still
# runs every other job.
CI_REPAIR_PERMISSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {**JOB_PERMISSIONS, "checks": "read", "actions": "read"}
)

# Reading settings from a repository Neo does not work on (the owner's `.github`).
CONFIG_PERMISSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {"contents": "read", "metadata": "read"}
)

# A token cache key: (installation, lower-case "owner/name", sorted permissions).
_Key = tuple[int, str, tuple[tuple[str, str], ...]]


def _key(installation_id: int, repository: str, permissions: Mapping[str, str] | None) -> _Key:
    granted = JOB_PERMISSIONS if permissions is None else permissions
    return installation_id, repository.lower(), tuple(sorted(granted.items()))


@dataclass(frozen=True, slots=True)
class InstallationToken:
    """An installation access token for one repository."""

    token: str = field(repr=False)
    expires_at: datetime
    repository: str  # "owner/name"
    permissions: Mapping[str, str]  # what GitHub granted


class AppAuth(Protocol):
    """What the worker and the repository client ask of the App: tokens, clients, its login.

    `GitHubApp` is the App's; `neo action` passes one that authenticates
    with the workflow's token, which may ignore `installation_id` and
    `permissions` (a workflow token has the permissions its job declares).
    Errors are `GitHubAuthError`s with the status GitHub answered.
    """

    async def installation_token(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> InstallationToken:
        """A token for `repository` ("owner/name"); `permissions` None: JOB_PERMISSIONS."""
        ...

    async def installation_client(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> GitHub[Any]:
        """A githubkit client acting on `repository` with such a token."""
        ...

    async def bot_login(self) -> str:
        """The login Neo's comments and commits are by, e.g. `neo[bot]`."""
        ...


# A PEM RSA key of 4,096 bits is about 3 KiB.
MAX_KEY_FILE = 64 * 1024


def load_private_key(value: str | None, path: str | None) -> str:
    """The App's private key PEM from NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH.

    Exactly one must be set. A value may carry its newlines as `\\n` escapes,
    as single-line environment files need.
    """
    value = value if value and value.strip() else None
    path = path if path and path.strip() else None
    if value is not None and path is not None:
        raise ConfigError("set only one of NEO_GITHUB_PRIVATE_KEY and NEO_GITHUB_PRIVATE_KEY_PATH")
    if value is not None:
        return value.strip().replace("\\n", "\n") + "\n"
    if path is not None:
        try:
            return read_setting_file(Path(path).expanduser(), MAX_KEY_FILE).decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"NEO_GITHUB_PRIVATE_KEY_PATH: {path} is not a PEM file") from None
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise ConfigError(
                f"NEO_GITHUB_PRIVATE_KEY_PATH: cannot read {path}: {reason}"
            ) from None
    raise ConfigError(f"{KEY_SETTINGS} is required: the GitHub App's private key")


def _check_api_url(api_url: str) -> httpx.URL:
    try:
        url = httpx.URL(api_url.strip())
    except (httpx.InvalidURL, TypeError):
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            "NEO_GITHUB_API_URL must be an http(s) URL such as https://api.github.com "
            "or https://ghe.example.com/api/v3"
        )
    return url


def _proxy_for(url: httpx.URL) -> str | None:
    # A shared transport ignores httpx's environment proxies, so honour
    # HTTPS_PROXY / NO_PROXY here, once, for the one host Neo talks to.
    proxies = urllib.request.getproxies()
    if not proxies or urllib.request.proxy_bypass(url.host):
        return None
    return proxies.get(url.scheme) or proxies.get("all")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes a fifth of a second; one context serves every pool.
    return httpx.create_ssl_context()


def connection_pool(url: httpx.URL, max_connections: int) -> httpx.AsyncHTTPTransport:
    """One keep-alive pool to the API at `url`, with the environment's proxy.

    Give it to githubkit as `Borrowed(pool)`, and close it yourself.
    """
    return httpx.AsyncHTTPTransport(
        verify=_tls_context(),
        proxy=_proxy_for(url),
        limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max(1, max_connections // 5),
        ),
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Borrowed(httpx.AsyncBaseTransport):
    """The shared pool as githubkit's per-request clients see it.

    githubkit opens and closes an httpx client around every request, and
    closing a client closes its transport; this one stays open until the
    GitHubApp closes the pool. `api_version`, when given, replaces the
    `X-GitHub-Api-Version` of every request (`bot.github.core.api_version`).
    """

    def __init__(self, pool: httpx.AsyncBaseTransport, api_version: str | None = None) -> None:
        self._pool = pool
        self._api_version = api_version

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._api_version is not None:
            # githubkit stamps its schema's version on each call; GHES knows only its own.
            request.headers["X-GitHub-Api-Version"] = self._api_version
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        pass


class GitHubApp:
    """The GitHub App: its JWT, its installation tokens and its HTTP pool.

    `app_id`, `private_key` and `api_url` are NEO_GITHUB_APP_ID, the PEM from
    `load_private_key` and NEO_GITHUB_API_URL; a bad one raises ConfigError
    here, so a server fails at start-up rather than on its first job. `clock`
    decides when a cached token is due for renewal (tests move it).
    """

    def __init__(
        self,
        app_id: int | str,
        private_key: str,
        api_url: str = DEFAULT_API_URL,
        *,
        clock: Callable[[], datetime] = _utcnow,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        url_variable: str = "NEO_GITHUB_API_URL",
    ) -> None:
        issuer = str(app_id).strip()
        if not issuer:
            raise ConfigError("NEO_GITHUB_APP_ID is required: the GitHub App's id")
        pem = private_key.strip() + "\n"
        signing_key(pem)  # read and checked here, once: every JWT is signed with it
        url = _check_api_url(api_url)
        self.app_id = issuer
        self.api_url = str(url)
        # What an unreachable GitHub tells the operator to check: "" when
        # api_url is the default, which nobody set and nothing can be wrong with.
        self._url_variable = url_variable
        self._clock = clock
        self._retry = retry
        self._sleep = sleep
        self._pool = connection_pool(url, max_connections=100)
        self._github: GitHub[AppAuthStrategy] = GitHub(
            AppKeyStrategy(issuer, pem),
            base_url=url,
            user_agent=_USER_AGENT,
            timeout=_TIMEOUT,
            async_transport=Borrowed(self._pool, api_version(url)),
            # One retry policy, bot.github.core's: githubkit's sleeps outside our control.
            auto_retry=False,
            # Its own JWT cache: githubkit's default one is shared by every client
            # in the process, keyed by the App id alone.
            cache_strategy=MemCacheStrategy(),
            # No HTTP cache: responses for one installation must never answer another.
            http_cache=False,
        )
        self._tokens: dict[_Key, InstallationToken] = {}
        self._minting: dict[_Key, asyncio.Task[InstallationToken]] = {}
        self._login: str | None = None
        self._login_lock = asyncio.Lock()
        self._closed = False

    @property
    def app_client(self) -> GitHub[AppAuthStrategy]:
        """The client authenticated as the App itself (JWT), for /app endpoints."""
        self._check_open()
        return self._github

    @property
    def closed(self) -> bool:
        return self._closed

    # -- lifecycle --

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
        """Cancel token requests in flight and close the connection pool."""
        if self._closed:
            return
        self._closed = True
        pending = list(self._minting.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._tokens.clear()
        await self._pool.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the GitHubApp is closed")

    # -- the App --

    async def bot_login(self) -> str:
        """The login of the App's bot user, `<slug>[bot]` (GET /app, once)."""
        self._check_open()
        async with self._login_lock:
            if self._login is None:
                try:
                    response = await self._retried(
                        "GET", "/app", self._github.rest.apps.async_get_authenticated
                    )
                    app = response.parsed_data
                except GitHubException as error:
                    raise _auth_error(error, _app_hint(error), self._url_variable) from None
                except ValueError:
                    raise _unexpected("GET /app") from None
                slug = app.slug if app else None
                if not isinstance(slug, str) or not slug:
                    raise GitHubAuthError(
                        "github: GET /app answered without the App's slug "
                        "(check NEO_GITHUB_API_URL)"
                    )
                self._login = f"{slug}[bot]"
            return self._login

    # -- installations --

    async def installation_token(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> InstallationToken:
        """A token for `repository` ("owner/name") with `permissions`, cached.

        `permissions` defaults to JOB_PERMISSIONS; pass fewer (CONFIG_PERMISSIONS)
        for a repository the job only reads.
        """
        self._check_open()
        _split(repository)
        key = _key(installation_id, repository, permissions)
        cached = self._tokens.get(key)
        if cached is not None and self._fresh(cached):
            return cached
        task = self._minting.get(key)
        if task is None:
            task = asyncio.create_task(self._mint(installation_id, repository, key))
            self._minting[key] = task
            task.add_done_callback(lambda done: self._minted(key, done))
        # One caller giving up must not cancel the call the others wait for.
        return await asyncio.shield(task)

    async def installation_client(
        self,
        installation_id: int,
        repository: str,
        permissions: Mapping[str, str] | None = None,
    ) -> GitHub[InstallationAuth]:
        """A client acting as the installation on `repository` only.

        It takes its token from `installation_token` on every request, so it
        outlives any one token; a token that GitHub refuses (revoked when the
        App is reinstalled) is renewed once. The first token is fetched here,
        so bad credentials, or a repository the installation cannot see, show
        up now, as GitHubAuthError. Nothing to close: it uses the App's pool.
        """
        await self.installation_token(installation_id, repository, permissions)
        frozen = None if permissions is None else tuple(sorted(permissions.items()))
        return _InstallationGitHub(
            InstallationAuth(self, installation_id, repository, frozen),
            config=self._github.config,
        )

    def forget_token(
        self,
        installation_id: int,
        repository: str,
        token: str,
        permissions: Mapping[str, str] | None = None,
    ) -> None:
        """Drop the cached token for this key if it is still `token` (GitHub refused it)."""
        key = _key(installation_id, repository, permissions)
        cached = self._tokens.get(key)
        if cached is not None and cached.token == token:
            del self._tokens[key]

    async def _retried(self, method: str, path: str, call: Callable[[], Awaitable[_R]]) -> _R:
        """`call`, its rate limits and 5xx retried as `bot.github.core` decides.

        The last failure is raised as githubkit's, for `_auth_error` to word. A
        connection error is not retried: the App's URL is more likely wrong.
        """
        attempt = 1
        while True:
            try:
                return await call()
            except RequestFailed as failed:
                raw = failed.response.raw_response
                decision = classify(
                    method, path, raw.status_code, raw.headers, raw.content, now=time.time()
                )
                if not isinstance(decision, Retry):
                    raise
                wait = retry_wait(self._retry, attempt, decision)
                if isinstance(wait, GitHubError):
                    raise
            await self._sleep(wait)
            attempt += 1

    def _fresh(self, token: InstallationToken) -> bool:
        return self._clock() < token.expires_at - REFRESH_MARGIN

    async def _mint(self, installation_id: int, repository: str, key: _Key) -> InstallationToken:
        _, name = _split(repository)
        # The key holds the permissions asked for, as plain pairs.
        wanted = cast("AppPermissionsType", dict(key[2]))
        try:
            response = await self._retried(
                "POST",
                "/app/installations/{id}/access_tokens",
                lambda: self._github.rest.apps.async_create_installation_access_token(
                    installation_id, repositories=[name], permissions=wanted
                ),
            )
            data = response.parsed_data
            expires_at = datetime.fromisoformat(data.expires_at)
        except GitHubException as error:
            hint = _token_hint(error, installation_id, repository, key[2])
            raise _auth_error(error, hint, self._url_variable) from None
        except ValueError:  # not GitHub's shape: pydantic's and fromisoformat's errors
            raise _unexpected("POST /app/installations/{id}/access_tokens") from None
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        granted = data.permissions
        permissions = (
            {}
            if granted is None or isinstance(granted, Unset)
            else granted.model_dump(mode="json", exclude_unset=True, exclude_none=True)
        )
        token = InstallationToken(
            token=data.token,
            expires_at=expires_at,
            repository=repository,
            permissions=MappingProxyType({str(k): str(v) for k, v in permissions.items()}),
        )
        # Drop what has expired, so a long-lived server keeps one entry per live repo.
        for stale in [k for k, v in self._tokens.items() if not self._fresh(v)]:
            del self._tokens[stale]
        self._tokens[key] = token
        return token

    def _minted(self, key: _Key, task: asyncio.Task[InstallationToken]) -> None:
        if self._minting.get(key) is task:
            del self._minting[key]
        if not task.cancelled():
            task.exception()  # retrieved: every waiter may have given up


class AppSettings(Protocol):
    """The settings `signed_in_app` reads (`bot.config.settings.Settings` has them)."""

    @property
    def github_app_id(self) -> int: ...
    @property
    def github_private_key(self) -> SecretStr | None: ...
    @property
    def github_private_key_path(self) -> Path | None: ...
    @property
    def github_api_url(self) -> str: ...
    # The fields given (pydantic's): whether github_api_url is the default.
    @property
    def model_fields_set(self) -> set[str]: ...


@asynccontextmanager
async def signed_in_app(settings: AppSettings) -> AsyncIterator[tuple[GitHubApp, str]]:
    """The App of `settings` and its bot login, checked with GitHub; closed after.

    What `neo serve`, its scheduler and `neo worker` each start with. Raises
    ConfigError (one line) for a bad key or credentials GitHub refuses.
    """
    key = settings.github_private_key
    private_key = load_private_key(
        key.get_secret_value() if key else None,
        str(settings.github_private_key_path) if settings.github_private_key_path else None,
    )
    # Blamed for a GitHub out of reach only when it was set: offline, the
    # default is not what is wrong.
    variable = "NEO_GITHUB_API_URL" if "github_api_url" in settings.model_fields_set else ""
    async with GitHubApp(
        settings.github_app_id, private_key, settings.github_api_url, url_variable=variable
    ) as app:
        try:
            login = await app.bot_login()
        except GitHubAuthError as error:
            raise ConfigError(str(error)) from None
        yield app, login


@dataclass(frozen=True)
class InstallationAuth(BaseAuthStrategy):
    """githubkit auth for one installation on one repository, via the App's token cache."""

    app: GitHubApp
    installation_id: int
    repository: str
    # Sorted (name, level) pairs; None: JOB_PERMISSIONS.
    permissions: tuple[tuple[str, str], ...] | None = None

    def get_auth_flow(self, github: GitHubCore[Any]) -> httpx.Auth:
        return _InstallationFlow(self)


class _InstallationFlow(httpx.Auth):
    def __init__(self, auth: InstallationAuth) -> None:
        self._auth = auth

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("installation clients are async: use the async_* methods")

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        auth = self._auth
        permissions = None if auth.permissions is None else dict(auth.permissions)
        app, installation, repository = auth.app, auth.installation_id, auth.repository
        token = await app.installation_token(installation, repository, permissions)
        request.headers["Authorization"] = f"token {token.token}"
        response = yield request
        if response.status_code == 401:
            app.forget_token(installation, repository, token.token, permissions)
            token = await app.installation_token(installation, repository, permissions)
            request.headers["Authorization"] = f"token {token.token}"
            yield request


class _InstallationGitHub(GitHub[InstallationAuth]):
    async def _arequest(self, *args: Any, **kwargs: Any) -> httpx.Response:
        # githubkit wraps whatever the auth flow raises in RequestError; a
        # failed token request is an App problem and keeps its own type.
        try:
            return await super()._arequest(*args, **kwargs)
        except RequestError as error:
            if isinstance(error.exc, GitHubAuthError):
                raise error.exc from None
            raise


def _split(repository: str) -> tuple[str, str]:
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"repository must be 'owner/name', got {repository!r}")
    return owner, name


def _status(error: GitHubException) -> int | None:
    return error.response.status_code if isinstance(error, RequestFailed) else None


def _app_hint(error: GitHubException) -> str:
    # GET /app exists on every GitHub; a 404 means the URL is not the API's.
    return "check NEO_GITHUB_API_URL" if _status(error) == 404 else _CREDENTIALS


def _token_hint(
    error: GitHubException,
    installation_id: int,
    repository: str,
    permissions: tuple[tuple[str, str], ...],
) -> str:
    status = _status(error)
    if status == 404:
        return f"check that installation {installation_id} of the App exists"
    if status == 422:
        return (
            f"check that installation {installation_id} can access {repository} and grants "
            + _granting(permissions)
        )
    if status == 403:
        return "check the App's permissions and GitHub's rate limit"
    return _CREDENTIALS


def _granting(permissions: tuple[tuple[str, str], ...]) -> str:
    """'contents, issues and pull requests write': what a token asked for, bar metadata."""
    phrases = []
    for level in ("write", "read"):
        names = [name.replace("_", " ") for name, have in permissions if have == level]
        names = [name for name in names if name != "metadata"]
        if names:
            listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
            phrases.append(f"{listed} {level}")
    return "; ".join(phrases) or "the permissions asked for"


def _auth_error(
    error: GitHubException, hint: str, url_variable: str = "NEO_GITHUB_API_URL"
) -> GitHubAuthError:
    """One line naming the status and the setting to check; never a key or a token.

    No answer at all names the host, the cause and what to check, and names
    `url_variable` only when it was set (connection.describe)."""
    if isinstance(error, RequestFailed):
        status = error.response.status_code
        if status >= 500:
            hint = "GitHub is unavailable; try again later"
        raw = error.response.raw_response
        message = github_message(raw.content, raw.reason_phrase)
        return GitHubAuthError(f"github {status}: {message} ({hint})", status=status)
    if isinstance(error, RequestError) and isinstance(error.exc, BaseException):
        if isinstance(error, RequestTimeout) and not isinstance(error.exc, httpx.ConnectTimeout):
            advice = f"check {url_variable} and the network" if url_variable else "try again later"
            return GitHubAuthError(f"github: no answer in time ({advice})")
        endpoint = Endpoint("github", url_variable, "NEO_GITHUB_PRIVATE_KEY")
        return GitHubAuthError(
            describe(endpoint, error.exc, proxy=proxy_for(request_url(error.exc))).line
        )
    return GitHubAuthError(f"github: {type(error).__name__} ({hint})")


def _unexpected(what: str) -> GitHubAuthError:
    return GitHubAuthError(
        f"github: the answer to {what} is not GitHub's (check NEO_GITHUB_API_URL)"
    )
