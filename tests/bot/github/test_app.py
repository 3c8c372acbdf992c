"""GitHub App auth against a fake GitHub that checks the JWT and the token's scope."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from githubkit.exception import RequestFailed

from bot.config.settings import Settings
from bot.github.app import (
    CONFIG_PERMISSIONS,
    JOB_PERMISSIONS,
    WORKFLOW_JOB_PERMISSIONS,
    AppAuth,
    GitHubApp,
    GitHubAuthError,
    load_private_key,
    signed_in_app,
)
from bot.github.signing import AppJWTAuth, signing_key
from runner.errors import ConfigError
from tests.fakes import FakeGitHub, rsa_private_key_pem

LEAST = {"contents": "write", "issues": "write", "pull_requests": "write", "metadata": "read"}
INSTALLATION = 7


class Clock:
    """A clock the test moves; starts at the real time, as the fake's tokens do."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def _serve(fake: FakeGitHub) -> Iterator[FakeGitHub]:
    fake.install(INSTALLATION, "octo", ["hello", "other"])
    fake.set_permission("octo/hello", "alice", "write")
    with fake:
        yield fake


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from _serve(FakeGitHub())


@pytest.fixture
def ghes() -> Iterator[FakeGitHub]:
    yield from _serve(FakeGitHub(path_prefix="/api/v3"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def app(github: FakeGitHub, clock: Clock) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(
        github.app_id, github.private_key_pem, github.base_url, clock=clock
    ) as app:
        yield app


def assert_safe_line(message: str, pem: str) -> None:
    """One line, and nothing of the key or of any token in it."""
    assert "\n" not in message
    assert "PRIVATE KEY" not in message
    body = [line for line in pem.splitlines() if line and not line.startswith("-----")]
    assert all(line[:16] not in message for line in body)
    assert "eyJ" not in message  # a JWT's header
    assert "ghs_" not in message


# --- installation tokens -----------------------------------------------------------


async def test_token_is_scoped_to_one_repository_with_the_least_permissions(
    app: GitHubApp, github: FakeGitHub
) -> None:
    token = await app.installation_token(INSTALLATION, "octo/hello")

    [request] = github.token_requests
    assert request.installation_id == INSTALLATION
    assert request.repositories == ("hello",)
    assert request.repository_ids is None
    assert request.permissions == LEAST == dict(JOB_PERMISSIONS)
    assert request.claims["iss"] == str(github.app_id)
    assert request.claims["iat"] <= time.time()
    assert 0 < request.claims["exp"] - request.claims["iat"] <= 600

    [issued] = github.tokens
    assert token.token == issued.token
    assert token.token.startswith("ghs_")
    assert issued.repositories == ("octo/hello",)
    assert token.repository == "octo/hello"
    assert dict(token.permissions) == LEAST
    assert token.expires_at == issued.expires_at
    assert token.token not in repr(token)
    [http] = github.requests
    assert (http.method, http.route, http.auth, http.status) == (
        "POST",
        f"/app/installations/{INSTALLATION}/access_tokens",
        "jwt",
        201,
    )


async def test_token_is_cached_until_a_minute_before_it_expires(
    github: FakeGitHub, clock: Clock
) -> None:
    github.token_lifetime = timedelta(minutes=10)
    async with GitHubApp(
        github.app_id, github.private_key_pem, github.base_url, clock=clock
    ) as app:
        first = await app.installation_token(INSTALLATION, "octo/hello")
        assert await app.installation_token(INSTALLATION, "octo/hello") is first
        clock.now = first.expires_at - timedelta(seconds=61)
        assert await app.installation_token(INSTALLATION, "octo/hello") is first
        assert len(github.token_requests) == 1

        clock.now = first.expires_at - timedelta(seconds=59)
        renewed = await app.installation_token(INSTALLATION, "octo/hello")

    assert len(github.token_requests) == 2
    assert renewed.token != first.token
    assert renewed.expires_at >= first.expires_at


async def test_each_repository_gets_its_own_token(app: GitHubApp, github: FakeGitHub) -> None:
    hello = await app.installation_token(INSTALLATION, "octo/hello")
    other = await app.installation_token(INSTALLATION, "octo/other")

    assert hello.token != other.token
    assert [r.repositories for r in github.token_requests] == [("hello",), ("other",)]
    assert await app.installation_token(INSTALLATION, "Octo/Hello") is hello


async def test_a_read_only_token_is_minted_and_cached_apart_from_the_jobs(
    app: GitHubApp, github: FakeGitHub
) -> None:
    job = await app.installation_token(INSTALLATION, "octo/hello")
    read = await app.installation_token(INSTALLATION, "octo/hello", CONFIG_PERMISSIONS)

    assert read.token != job.token
    assert dict(read.permissions) == {"contents": "read", "metadata": "read"}
    assert [r.permissions for r in github.token_requests] == [LEAST, dict(CONFIG_PERMISSIONS)]
    assert await app.installation_token(INSTALLATION, "octo/hello", CONFIG_PERMISSIONS) is read
    assert await app.installation_token(INSTALLATION, "octo/hello") is job
    # A client with the read-only token reads, and GitHub refuses it a write.
    client = await app.installation_client(INSTALLATION, "octo/hello", CONFIG_PERMISSIONS)
    github.add_issue("octo/hello")
    await client.rest.repos.async_get("octo", "hello")
    with pytest.raises(RequestFailed) as refused:
        await client.rest.issues.async_create_comment("octo", "hello", 1, body="hi")
    assert refused.value.response.status_code == 403
    assert len(github.token_requests) == 2


async def test_concurrent_requests_for_one_repository_share_one_call(
    app: GitHubApp, github: FakeGitHub
) -> None:
    tokens = await asyncio.gather(
        *(app.installation_token(INSTALLATION, "octo/hello") for _ in range(20)),
        *(app.installation_token(INSTALLATION, "octo/other") for _ in range(5)),
    )

    assert len(github.token_requests) == 2
    assert len({token.token for token in tokens[:20]}) == 1
    assert len({token.token for token in tokens[20:]}) == 1
    assert tokens[0].token != tokens[20].token


async def test_a_caller_that_gives_up_does_not_cancel_the_shared_call(
    app: GitHubApp, github: FakeGitHub
) -> None:
    impatient = asyncio.create_task(app.installation_token(INSTALLATION, "octo/hello"))
    patient = asyncio.create_task(app.installation_token(INSTALLATION, "octo/hello"))
    await asyncio.sleep(0)
    impatient.cancel()

    token = await patient

    assert impatient.cancelled()
    assert token.token == github.tokens[0].token
    assert len(github.token_requests) == 1


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wrong", "expected"),
    [
        (
            "app id",
            "github 401: Integration not found "
            "(check NEO_GITHUB_APP_ID and NEO_GITHUB_PRIVATE_KEY)",
        ),
        (
            "key",
            "github 401: A JSON web token could not be decoded "
            "(check NEO_GITHUB_APP_ID and NEO_GITHUB_PRIVATE_KEY)",
        ),
    ],
)
async def test_wrong_credentials_are_one_line_without_key_material(
    github: FakeGitHub, wrong: str, expected: str
) -> None:
    app_id = github.app_id + 1 if wrong == "app id" else github.app_id
    pem = rsa_private_key_pem() if wrong == "key" else github.private_key_pem
    async with GitHubApp(app_id, pem, github.base_url) as app:
        with pytest.raises(GitHubAuthError) as raised:
            await app.installation_token(INSTALLATION, "octo/hello")
        with pytest.raises(GitHubAuthError):
            await app.bot_login()

    error = raised.value
    assert str(error) == expected
    assert error.kind == "github_error"
    assert error.status == 401
    assert_safe_line(str(error), pem)
    assert github.tokens == []
    assert [r.status for r in github.requests] == [401, 401]


@pytest.mark.parametrize(
    ("installation", "repository", "expected"),
    [
        (
            99,
            "octo/hello",
            "github 404: Not Found (check that installation 99 of the App exists)",
        ),
        (
            INSTALLATION,
            "octo/secret",
            "github 422: There is at least one repository that does not exist or is not "
            "accessible to the parent installation. (check that installation 7 can access "
            "octo/secret and grants contents, issues and pull requests write)",
        ),
    ],
)
async def test_an_installation_that_cannot_serve_the_repository_is_named(
    app: GitHubApp, installation: int, repository: str, expected: str
) -> None:
    with pytest.raises(GitHubAuthError, match=r"^github 4") as raised:
        await app.installation_token(installation, repository)
    assert str(raised.value) == expected


async def test_permissions_the_installation_lacks_are_refused(github: FakeGitHub) -> None:
    github.install(8, "readonly", ["docs"], permissions={"contents": "read", "metadata": "read"})
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app:
        with pytest.raises(GitHubAuthError) as raised:
            await app.installation_token(8, "readonly/docs")
    assert str(raised.value).startswith(
        "github 422: The permissions requested are not granted to this installation."
    )
    assert github.token_requests[0].permissions == LEAST


@pytest.mark.parametrize(
    ("repository", "permissions", "named"),
    [
        # Installed before the App asked for `workflows`: its owner has not granted it.
        (
            "octo/hello",
            WORKFLOW_JOB_PERMISSIONS,
            "grants contents, issues, pull requests and workflows write)",
        ),
        # The owner's settings repository, where the App is not installed.
        ("octo/.github", CONFIG_PERMISSIONS, "grants contents read)"),
    ],
)
async def test_a_refused_token_names_the_permissions_it_asked_for(
    app: GitHubApp,
    github: FakeGitHub,
    repository: str,
    permissions: Mapping[str, str],
    named: str,
) -> None:
    with pytest.raises(GitHubAuthError) as raised:
        await app.installation_token(INSTALLATION, repository, permissions)
    assert str(raised.value).startswith("github 422: ")
    assert str(raised.value).endswith(
        f"(check that installation 7 can access {repository} and {named}"
    )
    assert github.token_requests[0].permissions == dict(permissions)


def test_workflow_edits_ask_for_what_a_job_asks_and_workflows() -> None:
    assert dict(WORKFLOW_JOB_PERMISSIONS) == {**JOB_PERMISSIONS, "workflows": "write"}
    assert "workflows" not in JOB_PERMISSIONS


async def test_the_app_is_what_the_worker_and_publisher_need(
    app: GitHubApp, github: FakeGitHub
) -> None:
    auth: AppAuth = app  # mypy checks the Protocol; this checks it at run time too
    assert await auth.bot_login() == github.bot_login
    token = await auth.installation_token(INSTALLATION, "octo/hello")
    client = await auth.installation_client(INSTALLATION, "octo/hello")
    assert (
        await client.rest.repos.async_get("octo", "hello")
    ).parsed_data.full_name == "octo/hello"
    assert token.repository == "octo/hello"


async def test_a_failure_is_not_cached(app: GitHubApp, github: FakeGitHub) -> None:
    with pytest.raises(GitHubAuthError):
        await app.installation_token(8, "later/repo")
    github.install(8, "later", ["repo"])

    token = await app.installation_token(8, "later/repo")

    assert token.repository == "later/repo"
    assert len(github.token_requests) == 2


async def test_an_unreachable_api_names_host_cause_and_the_url_setting(
    github: FakeGitHub,
) -> None:
    url = github.base_url
    port = url.rsplit(":", 1)[1].split("/")[0]
    github.stop()
    async with GitHubApp(github.app_id, github.private_key_pem, url) as app:
        with pytest.raises(GitHubAuthError) as raised:
            await app.installation_token(INSTALLATION, "octo/hello")
    assert str(raised.value) == (
        f"github: cannot connect to 127.0.0.1:{port}: connection refused"
        " (check NEO_GITHUB_API_URL and the network)"
    )


async def test_offline_start_up_blames_the_network_not_a_setting_nobody_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The service started offline: api.github.com, the default, does not resolve.
    real = socket.getaddrinfo

    def offline(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("api.github.com", b"api.github.com"):
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.delenv("NEO_GITHUB_API_URL", raising=False)
    settings = Settings(
        github_app_id=1, github_private_key=rsa_private_key_pem(), webhook_secret="s"
    )

    with pytest.raises(ConfigError) as raised:
        async with signed_in_app(settings):
            pass

    assert str(raised.value) == (
        "github: cannot connect to api.github.com:443: DNS lookup failed (offline?)"
        " (check the network)"
    )


async def test_start_up_names_the_url_setting_when_it_was_set(
    github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = github.base_url
    github.stop()
    monkeypatch.setenv("NEO_GITHUB_API_URL", url)
    settings = Settings(
        github_app_id=1, github_private_key=github.private_key_pem, webhook_secret="s"
    )

    with pytest.raises(ConfigError) as raised:
        async with signed_in_app(settings):
            pass

    assert "(check NEO_GITHUB_API_URL and the network)" in str(raised.value)


async def test_an_api_url_without_the_ghes_prefix_names_the_url_setting(
    ghes: FakeGitHub,
) -> None:
    root = ghes.base_url.removesuffix("/api/v3")
    async with GitHubApp(ghes.app_id, ghes.private_key_pem, root) as app:
        with pytest.raises(GitHubAuthError) as raised:
            await app.bot_login()
    assert str(raised.value) == "github 404: Not Found (check NEO_GITHUB_API_URL)"


async def test_an_answer_that_is_not_githubs_is_an_auth_error(
    app: GitHubApp, github: FakeGitHub
) -> None:
    github.add_route(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        lambda call: (201, {"token": "ghs_x", "expires_at": "soon"}),
        auth="app",
    )
    with pytest.raises(GitHubAuthError) as raised:
        await app.installation_token(INSTALLATION, "octo/hello")
    assert str(raised.value) == (
        "github: the answer to POST /app/installations/{id}/access_tokens is not GitHub's "
        "(check NEO_GITHUB_API_URL)"
    )
    assert_safe_line(str(raised.value), github.private_key_pem)


async def test_no_repr_shows_the_private_key(app: GitHubApp, github: FakeGitHub) -> None:
    strategy = app.app_client.auth
    flow = strategy.get_auth_flow(app.app_client)

    for text in (repr(app), repr(strategy), repr(flow)):
        assert_safe_line(text, github.private_key_pem)
    assert repr(strategy) == f"AppAuthStrategy(app_id='{github.app_id}')"


def _ec_key() -> str:
    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )


def _encrypted(pem: str) -> str:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ).decode()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("garbage", "not a PEM RSA private key"),
        ("truncated", "not a PEM RSA private key"),
        ("public key", "not a PEM RSA private key"),
        ("ec key", "not an RSA key"),
        ("encrypted", "the private key is encrypted"),
    ],
)
def test_a_bad_private_key_fails_at_construction(
    github: FakeGitHub, kind: str, expected: str
) -> None:
    pem = {
        "garbage": "MIIEowIBAAKCAQEAnotakey",
        "truncated": github.private_key_pem[:400],
        "public key": github.public_key_pem,
        "ec key": _ec_key(),
        "encrypted": _encrypted(github.private_key_pem),
    }[kind]

    with pytest.raises(ConfigError) as raised:
        GitHubApp(github.app_id, pem, github.base_url)

    message = str(raised.value)
    assert message.startswith("NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH: ")
    assert expected in message
    assert raised.value.kind == "config_error"
    assert_safe_line(message, pem)
    assert "notakey" not in message
    assert github.requests == []


@pytest.mark.parametrize(
    ("app_id", "url", "setting"),
    [
        ("", "https://api.github.com", "NEO_GITHUB_APP_ID"),
        (" ", "https://api.github.com", "NEO_GITHUB_APP_ID"),
        (1, "api.github.com", "NEO_GITHUB_API_URL"),
        (1, "ftp://ghe.example.com/api/v3", "NEO_GITHUB_API_URL"),
        (1, "", "NEO_GITHUB_API_URL"),
    ],
)
def test_bad_settings_fail_at_construction(
    github: FakeGitHub, app_id: int | str, url: str, setting: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        GitHubApp(app_id, github.private_key_pem, url)
    assert str(raised.value).startswith(setting)
    assert "\n" not in str(raised.value)


# --- load_private_key -------------------------------------------------------------


def test_load_private_key_turns_escaped_newlines_into_newlines() -> None:
    pem = rsa_private_key_pem(1024)
    escaped = pem.strip().replace("\n", "\\n")

    assert "\n" not in escaped
    assert load_private_key(escaped, None) == pem
    assert load_private_key(pem, "") == pem


def test_load_private_key_reads_the_path(tmp_path: Path) -> None:
    pem = rsa_private_key_pem(1024)
    path = tmp_path / "app.pem"
    path.write_text(pem)

    assert load_private_key(None, str(path)) == pem
    assert load_private_key("", str(path)) == pem


@pytest.mark.parametrize(
    ("value", "path", "expected"),
    [
        (None, None, "NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH is required"),
        ("  ", "", "NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH is required"),
        ("k", "/k.pem", "set only one of NEO_GITHUB_PRIVATE_KEY and NEO_GITHUB_PRIVATE_KEY_PATH"),
        (
            None,
            "/nonexistent/app.pem",
            "NEO_GITHUB_PRIVATE_KEY_PATH: cannot read /nonexistent/app.pem: "
            "No such file or directory",
        ),
    ],
)
def test_load_private_key_errors_are_one_line(
    value: str | None, path: str | None, expected: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_private_key(value, path)
    assert str(raised.value).startswith(expected)
    assert "\n" not in str(raised.value)


def test_load_private_key_refuses_a_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "app.der"
    path.write_bytes(b"\x30\x82\xff\xfe")
    with pytest.raises(ConfigError, match=r"^NEO_GITHUB_PRIVATE_KEY_PATH: .* is not a PEM file$"):
        load_private_key(None, str(path))


# --- the App and its clients --------------------------------------------------------


async def test_bot_login_is_the_slug_with_bot_and_is_asked_once(
    app: GitHubApp, github: FakeGitHub
) -> None:
    logins = list(await asyncio.gather(app.bot_login(), app.bot_login()))

    assert logins == ["neo-test[bot]", "neo-test[bot]"]
    assert await app.bot_login() == "neo-test[bot]"
    assert [(r.method, r.route, r.auth, r.status) for r in github.requests] == [
        ("GET", "/app", "jwt", 200)
    ]


async def test_installation_client_reads_the_repository_and_permissions(
    app: GitHubApp, github: FakeGitHub
) -> None:
    client = await app.installation_client(INSTALLATION, "octo/hello")

    repo = await client.rest.repos.async_get("octo", "hello")
    permission = await client.rest.repos.async_get_collaborator_permission_level(
        "octo", "hello", "alice"
    )
    stranger = await client.rest.repos.async_get_collaborator_permission_level(
        "octo", "hello", "mallory"
    )
    # The token is scoped to octo/hello; the installation's other repository is hidden.
    with pytest.raises(RequestFailed) as hidden:
        await client.rest.repos.async_get("octo", "other")

    assert repo.parsed_data.full_name == "octo/hello"
    assert permission.parsed_data.permission == "write"
    assert permission.parsed_data.role_name == "write"
    assert stranger.parsed_data.permission == "none"
    assert hidden.value.response.status_code == 404
    assert len(github.token_requests) == 1
    reads = [r for r in github.requests if r.route.startswith("/repos/")]
    assert [r.auth for r in reads] == ["installation"] * 4
    assert [r.status for r in reads] == [200, 200, 200, 404]


async def test_installation_client_renews_a_revoked_token_once(
    app: GitHubApp, github: FakeGitHub
) -> None:
    client = await app.installation_client(INSTALLATION, "octo/hello")
    first = github.tokens[0].token
    github.revoke(first)

    repo = await client.rest.repos.async_get("octo", "hello")

    assert repo.parsed_data.name == "hello"
    assert len(github.token_requests) == 2
    assert (await app.installation_token(INSTALLATION, "octo/hello")).token != first
    reads = [r.status for r in github.requests if r.route == "/repos/octo/hello"]
    assert reads == [401, 200]


async def test_installation_client_renews_an_expiring_token_and_reports_auth_errors(
    app: GitHubApp, github: FakeGitHub, clock: Clock
) -> None:
    client = await app.installation_client(INSTALLATION, "octo/hello")
    github.installations.pop(INSTALLATION)  # the App was uninstalled
    clock.now += timedelta(hours=1)

    with pytest.raises(GitHubAuthError) as raised:
        await client.rest.repos.async_get("octo", "hello")

    assert str(raised.value) == (
        f"github 404: Not Found (check that installation {INSTALLATION} of the App exists)"
    )
    assert len(github.token_requests) == 2


async def test_github_enterprise_server_api_url_with_api_v3(ghes: FakeGitHub) -> None:
    assert ghes.base_url.endswith("/api/v3")
    async with GitHubApp(ghes.app_id, ghes.private_key_pem, ghes.base_url) as app:
        login = await app.bot_login()
        token = await app.installation_token(INSTALLATION, "octo/hello")
        client = await app.installation_client(INSTALLATION, "octo/hello")
        repo = await client.rest.repos.async_get("octo", "hello")

    assert login == "neo-test[bot]"
    assert token.token == ghes.tokens[0].token
    assert repo.parsed_data.url.startswith(ghes.base_url)
    assert [r.path for r in ghes.requests] == [
        "/api/v3/app",
        f"/api/v3/app/installations/{INSTALLATION}/access_tokens",
        "/api/v3/repos/octo/hello",
    ]
    assert [r.auth for r in ghes.requests] == ["jwt", "jwt", "installation"]


# --- one pool, closed on shutdown --------------------------------------------------


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_every_client_shares_one_pool_and_aclose_closes_it(github: FakeGitHub) -> None:
    app = GitHubApp(github.app_id, github.private_key_pem, github.base_url)
    await app.bot_login()
    client = await app.installation_client(INSTALLATION, "octo/hello")
    await client.rest.repos.async_get("octo", "hello")
    await app.installation_token(INSTALLATION, "octo/other")

    # The App's JWT calls and the installation's calls rode one kept-alive connection.
    assert len(github.requests) == 4
    assert len({r.client_port for r in github.requests}) == 1
    assert github.open_connections == 1

    await app.aclose()
    await app.aclose()  # idempotent

    assert app.closed
    assert await _until(lambda: github.open_connections == 0)
    with pytest.raises(RuntimeError, match="closed"):
        await app.installation_token(INSTALLATION, "octo/hello")
    with pytest.raises(RuntimeError, match="closed"):
        await app.bot_login()


async def test_aclose_cancels_a_token_request_in_flight(github: FakeGitHub) -> None:
    app = GitHubApp(github.app_id, github.private_key_pem, github.base_url)
    waiting = asyncio.create_task(app.installation_token(INSTALLATION, "octo/hello"))
    await asyncio.sleep(0)

    await app.aclose()

    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert app.closed


async def test_the_key_is_read_once_and_every_jwt_is_signed_with_it(
    app: GitHubApp, github: FakeGitHub
) -> None:
    # Reading a PEM RSA key checks its numbers: ~60 ms of CPU, which PyJWT
    # spent again for every JWT given the PEM text.
    before = signing_key.cache_info()
    again = GitHubApp(github.app_id, github.private_key_pem, github.base_url)
    flow = again.app_client.auth.get_auth_flow(again.app_client)
    assert isinstance(flow, AppJWTAuth)
    token = flow._create_jwt()
    after = signing_key.cache_info()
    await again.aclose()

    assert (after.hits - before.hits, after.misses - before.misses) == (2, 0)
    claims = jwt.decode(
        token, signing_key(github.private_key_pem).public_key(), algorithms=["RS256"]
    )
    assert claims["iss"] == str(github.app_id)
    assert claims["exp"] - claims["iat"] == 600
