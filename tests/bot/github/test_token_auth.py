"""bot.github.token_auth's GET /user against the fake GitHub: who the token is, retried."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from bot.github.app import GitHubApp
from bot.github.core import SECONDARY_WAIT
from bot.github.errors import GitHubAuthError
from bot.github.token_auth import WORKFLOW_BOT, TokenAuth, TokenRefused
from tests.fakes import FakeGitHub
from tests.fakes.github_api import Call, error_json, user_json

REPO = "octo/hello"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(slug="github-actions") as fake:
        fake.install(7, "octo", ["hello"])
        # GitHub's answer to GET /user for an installation token, such as GITHUB_TOKEN.
        fake.add_route(
            "GET",
            "/user",
            lambda call: (403, error_json(403, "Resource not accessible by integration")),
        )
        yield fake


@pytest.fixture
def token(github: FakeGitHub) -> str:
    async def mint() -> str:
        async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app:
            return (await app.installation_token(7, REPO)).token

    minted = asyncio.run(mint())
    github.clear()
    return minted


async def login(github: FakeGitHub, token: str, waits: list[float]) -> str:
    return await login_at(github.base_url, token, waits)


async def login_at(api_url: str, token: str, waits: list[float]) -> str:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with TokenAuth(token, api_url=api_url, sleep=sleep) as auth:
        first = await auth.bot_login()
        assert await auth.bot_login() == first  # asked once
        return first


def user_statuses(github: FakeGitHub) -> list[int]:
    return [r.status for r in github.requests if r.route == "/user"]


async def test_the_workflow_token_is_github_actions_bot_after_a_5xx(
    github: FakeGitHub, token: str
) -> None:
    github.fail_next("GET", "/user", 502, times=2)
    waits: list[float] = []

    assert await login(github, token, waits) == WORKFLOW_BOT

    assert user_statuses(github) == [502, 502, 403]
    assert waits == [1.0, 2.0]


async def test_a_secondary_rate_limit_is_waited_out_not_taken_for_a_workflow_token(
    github: FakeGitHub, token: str
) -> None:
    def user(call: Call) -> tuple[int, object]:
        # A public user as GET /user answers a user's token (a personal access token).
        profile = dict.fromkeys(("name", "company", "blog", "location", "email", "bio"))
        counts = dict.fromkeys(("public_repos", "public_gists", "followers", "following"), 0)
        stamps = dict.fromkeys(("created_at", "updated_at"), "2024-01-01T00:00:00Z")
        body = user_json("octocat", 583231, base=github.base_url)
        return 200, {**body, **profile, **counts, **stamps, "hireable": None}

    github.add_route("GET", "/user", user)
    github.fail_next("GET", "/user", 403)  # the fake's default 403: a secondary limit
    waits: list[float] = []

    assert await login(github, token, waits) == "octocat"

    assert user_statuses(github) == [403, 200]
    assert waits == [SECONDARY_WAIT]


async def test_a_rate_limit_beyond_the_cap_is_one_line_not_the_workflow_bot(
    github: FakeGitHub, token: str
) -> None:
    github.fail_next(
        "GET", "/user", 429, headers={"retry-after": "3600"}, message="API rate limit exceeded"
    )

    with pytest.raises(GitHubAuthError) as raised:
        await login(github, token, [])

    assert str(raised.value) == (
        "github 429 GET /user: API rate limit exceeded (GitHub asks to wait 3600 s)"
    )


async def test_no_answer_is_one_line_naming_the_setting(token: str) -> None:
    waits: list[float] = []
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        api_url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # nobody listens there

    with pytest.raises(GitHubAuthError) as raised:
        await login_at(api_url, token, waits)

    assert str(raised.value) == (
        "github: GET /user: cannot connect: ConnectError (check GITHUB_API_URL)"
    )
    assert waits == [1.0, 2.0, 4.0, 8.0]  # reads are retried, a lost connection too


async def test_a_refused_token_is_a_bad_input(github: FakeGitHub, token: str) -> None:
    github.fail_next("GET", "/user", 401, message="Bad credentials")
    waits: list[float] = []

    with pytest.raises(TokenRefused, match=r"^input github_token: GitHub refused it \(401\)"):
        await login(github, token, waits)

    assert waits == []
