"""bot.github.installations against the fake GitHub: Link pages, retries and their waits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from bot.github.app import GitHubApp
from bot.github.core import SECONDARY_WAIT, RetryPolicy
from bot.github.errors import GitHubError
from bot.github.installations import Installations
from bot.github.models import InstalledRepository
from tests.fakes import FakeGitHub
from tests.fakes.github_api import Call, error_json

LISTING = "/installation/repositories"
TOKENS = "/app/installations/{installation_id}/access_tokens"


class Sleeps:
    """A sleep that only records, and a wall clock it moves."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(slug="neo") as fake:
        fake.install(7, "octo", ["hello", "world"])
        yield fake


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def lister(app: GitHubApp, sleeps: Sleeps, **options: Any) -> Installations:
    return Installations(app, bot_login="neo[bot]", sleep=sleeps.sleep, now=sleeps.clock, **options)


def statuses(github: FakeGitHub, route: str) -> list[int]:
    return [r.status for r in github.requests if r.route == route]


async def test_installations_and_repositories_are_followed_across_pages(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    for n in range(150):
        github.install(100 + n, f"org{n}", ["repo"])
    github.install(8, "big", [f"r{n}" for n in range(250)])
    github.suspend(120)
    github.archive("big/r3")
    listing = lister(app, sleeps)

    active = await listing.active()
    big = await listing.repositories(8)

    assert active == [7, 8] + [100 + n for n in range(150) if n != 20]
    assert statuses(github, "/app/installations") == [200, 200]  # 152 in pages of 100
    assert big == [InstalledRepository(f"big/r{n}", "main") for n in range(250) if n != 3]
    assert statuses(github, LISTING) == [200, 200, 200]
    assert sleeps.waits == []


async def test_a_5xx_is_retried_with_backoff(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    github.fail_next("GET", "/app/installations", 502, times=2)
    github.fail_next("GET", LISTING, 503)
    listing = lister(app, sleeps)

    assert await listing.active() == [7]
    assert [r.full_name for r in await listing.repositories(7)] == ["octo/hello", "octo/world"]

    assert statuses(github, "/app/installations") == [502, 502, 200]
    assert statuses(github, LISTING) == [503, 200]
    assert sleeps.waits == [1.0, 2.0, 1.0]


async def test_a_page_after_the_first_is_retried_on_its_own(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    for n in range(100):
        github.install(100 + n, f"org{n}", ["repo"])
    failed: list[str] = []
    listed = github._list_installations  # the fake's own handler, wrapped

    def second_page_fails_once(call: Call) -> tuple[int, Any, dict[str, str]]:
        if call.query.get("page") == "2" and not failed:
            failed.append("once")
            return 500, error_json(500, "Server Error"), {}
        status, body, headers = listed(call)
        return status, body, dict(headers)

    github.add_route("GET", "/app/installations", second_page_fails_once, auth="app")

    active = await lister(app, sleeps).active()

    assert len(active) == 101
    assert statuses(github, "/app/installations") == [200, 500, 200]
    assert sleeps.waits == [1.0]


async def test_a_secondary_rate_limit_is_waited_out(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    # No header says how long: GitHub asks for at least a minute.
    github.fail_next("GET", LISTING, 403)
    github.fail_next("GET", "/app/installations", 403, headers={"retry-after": "7"})
    listing = lister(app, sleeps)

    assert await listing.active() == [7]
    assert len(await listing.repositories(7)) == 2

    assert statuses(github, "/app/installations") == [403, 200]
    assert statuses(github, LISTING) == [403, 200]
    assert sleeps.waits == [7.0, SECONDARY_WAIT]


async def test_retries_end_in_one_github_error(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    github.fail_next("GET", LISTING, 503, times=10)
    listing = lister(app, sleeps, retry=RetryPolicy(max_attempts=3))

    with pytest.raises(GitHubError) as raised:
        await listing.repositories(7)

    assert raised.value.status == 503
    assert str(raised.value) == f"github 503 GET {LISTING}: Service Unavailable"
    assert statuses(github, LISTING) == [503, 503, 503]
    assert sleeps.waits == [1.0, 2.0]


async def test_a_refusal_is_not_retried(github: FakeGitHub, app: GitHubApp, sleeps: Sleeps) -> None:
    github.fail_next("GET", "/app/installations", 401, message="Bad credentials")

    with pytest.raises(GitHubError, match=r"^github 401 GET /app/installations: Bad credentials$"):
        await lister(app, sleeps).active()

    assert sleeps.waits == []


async def test_the_read_tokens_failure_is_githubs_answer_and_retried(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    # githubkit mints the installation's read token inside its auth flow.
    github.fail_next("POST", TOKENS, 502)
    listing = lister(app, sleeps)

    assert len(await listing.repositories(7)) == 2

    assert statuses(github, "/app/installations/7/access_tokens") == [502, 201]
    assert sleeps.waits == [1.0]
    (token,) = github.token_requests
    assert token.repositories is None
    assert token.permissions == {"contents": "read", "metadata": "read"}


async def test_a_reader_reads_with_the_installations_read_token(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    github.put_file("octo/world", ".github/neo.yml", "schedules: []\n")
    listing = lister(app, sleeps)
    github.fail_next("GET", "/repos/{owner}/{repo}/contents/{path:path}", 502)

    first = await listing.reader(7, "octo/world").read_file_if_changed(".github/neo.yml", "main")
    again = await listing.reader(7, "octo/world").read_file_if_changed(
        ".github/neo.yml", "main", first.etag
    )

    assert first.text == "schedules: []\n"
    assert (again.modified, again.etag) == (False, first.etag)
    assert sleeps.waits == [1.0]
    assert len(github.token_requests) == 1  # one token for the installation, reused


async def test_a_refused_read_token_is_one_line_naming_the_token_request(
    github: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    github.fail_next("POST", TOKENS, 404, message="Not Found")

    with pytest.raises(GitHubError) as raised:
        await lister(app, sleeps).repositories(7)

    assert raised.value.status == 404
    assert str(raised.value) == "github 404 POST /app/installations/7/access_tokens: Not Found"
    assert sleeps.waits == []
