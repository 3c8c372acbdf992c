"""Signing in with GitHub to see a private repository's runs, against the fake GitHub's OAuth.

Every test goes through the real flow: the app's redirects, the fake's
authorize page and token exchange over HTTP, the user's token asked about
the repository, the worker's rule for who may act.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from bot.intake.server import Intake, create_app
from bot.intake.triggers import Rules
from bot.queue import open_queue, sqlite_url
from tests.bot.runs.signin import PUBLIC, SECURE, oauth_github, probe_app, settings_for
from tests.bot.runs.signin import signed_in_browser as browser
from tests.fakes import FakeGitHub


@pytest.fixture(scope="module")
def served() -> Iterator[FakeGitHub]:
    with oauth_github() as fake:
        yield fake


@pytest.fixture
def github(served: FakeGitHub) -> FakeGitHub:
    served.oauth.sign_in_as(None)  # nobody signed in to GitHub in "the browser"
    served.oauth.declines = False
    return served


def _cookies(response: httpx.Response) -> dict[str, dict[str, str | bool]]:
    """Each Set-Cookie of `response`: its name → its attributes (lower-case) and value."""
    found: dict[str, dict[str, str | bool]] = {}
    for header in response.headers.get_list("set-cookie"):
        jar: SimpleCookie = SimpleCookie()
        jar.load(header)
        for name, morsel in jar.items():
            found[name] = {key: morsel[key] for key in morsel if morsel[key]}
            found[name]["value"] = morsel.value
            # SimpleCookie keeps flags as "" or True; read them from the header too.
            for flag in ("httponly", "secure"):
                found[name][flag] = flag in header.lower()
    return found


async def test_an_anonymous_visitor_of_a_private_run_is_sent_to_github_to_sign_in(
    github: FakeGitHub,
) -> None:
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret?tab=log")

    assert page.status_code == 303
    location = urlsplit(page.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == (
        f"{github.origin}/login/oauth/authorize"
    )
    query = parse_qs(location.query)
    assert query["client_id"] == [github.oauth.client_id]
    assert query["redirect_uri"] == [f"{PUBLIC}/auth/github/callback"]
    assert len(query["state"][0]) >= 32
    cookie = _cookies(page)["neo_signin"]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "lax"
    assert cookie["secure"] is False  # plain http: a Secure cookie would never come back
    assert query["state"][0] not in str(cookie["value"])  # sealed, not readable


async def test_a_public_repositorys_runs_are_readable_by_anyone(github: FakeGitHub) -> None:
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/open")
        stop = await client.post(f"{PUBLIC}/probe/octo/open", data={"csrf": ""})

    assert page.status_code == 200
    assert page.json() == {"login": None, "read": True, "write": False, "csrf": ""}
    assert stop.status_code == 403  # an action needs a signed-in writer


async def test_signing_in_comes_back_to_the_page_as_a_reader(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("reader")
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret?tab=log", follow_redirects=True)
        hops = [str(r.url) for r in page.history]
        stop = await client.post(f"{PUBLIC}/probe/octo/secret", data={"csrf": page.json()["csrf"]})

    assert page.status_code == 200, page.text
    assert str(page.url) == f"{PUBLIC}/probe/octo/secret?tab=log"
    assert page.json()["login"] == "reader"
    assert (page.json()["read"], page.json()["write"]) == (True, False)
    assert hops[1].startswith(f"{github.origin}/login/oauth/authorize?")
    assert hops[2].startswith(f"{PUBLIC}/auth/github/callback?code=")
    session = _cookies(page.history[2])["neo_session"]
    assert session["httponly"] is True
    assert session["samesite"] == "lax"
    assert session["secure"] is False
    assert 0 < int(str(session["max-age"])) <= 8 * 3600
    (exchange,) = github.oauth.exchanges[-1:]
    assert exchange.client_secret_ok
    assert exchange.fields == {"client_id", "client_secret", "code", "redirect_uri"}
    assert exchange.error is None
    assert stop.status_code == 403  # a reader may not stop or steer


async def test_a_writer_may_act_with_the_sessions_csrf_token_only(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("writer")
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret", follow_redirects=True)
        token = page.json()["csrf"]
        acted = await client.post(f"{PUBLIC}/probe/octo/secret", data={"csrf": token})
        by_header = await client.post(
            f"{PUBLIC}/probe/octo/secret", headers={"x-csrf-token": token}
        )
        forged = await client.post(f"{PUBLIC}/probe/octo/secret", data={"csrf": "0" * 64})
        bare = await client.post(f"{PUBLIC}/probe/octo/secret")
        elsewhere = await client.post(
            f"{PUBLIC}/probe/octo/secret",
            data={"csrf": token},
            headers={"origin": "https://evil.example"},
        )

    assert page.json()["write"] is True
    assert len(token) == 64
    assert (acted.status_code, by_header.status_code) == (200, 200)
    assert (forged.status_code, bare.status_code, elsewhere.status_code) == (403, 403, 403)


async def test_a_signed_in_user_without_access_is_refused(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("mallory")
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret", follow_redirects=True)
        public = await client.get(f"{PUBLIC}/probe/octo/open")

    assert page.status_code == 403
    assert "mallory may not see" in page.text
    assert page.history[-1].url.path == "/auth/github/callback"  # signed in, then refused
    assert public.json()["login"] == "mallory"
    assert (public.json()["read"], public.json()["write"]) == (True, False)


async def test_a_callback_without_this_browsers_state_is_refused(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("writer")
    async with browser(settings_for(github)) as (client, site):
        start = await client.get(f"{PUBLIC}/auth/github/login?next=/probe/octo/secret")
        authorized = await client.get(start.headers["location"])
        back = urlsplit(authorized.headers["location"])
        code = parse_qs(back.query)["code"][0]
        forged = await client.get(
            f"{PUBLIC}/auth/github/callback", params={"code": code, "state": "forged"}
        )
        other_browser = httpx.ASGITransport(probe_app(site))
        async with httpx.AsyncClient(mounts={PUBLIC: other_browser}) as other:
            # Another browser (no state cookie) carrying this one's whole redirect.
            stolen = await other.get(authorized.headers["location"])
        page = await client.get(f"{PUBLIC}/probe/octo/secret")

    assert forged.status_code == 400
    assert stolen.status_code == 400
    for refused in (forged, stolen):
        assert "neo_session" not in _cookies(refused)
    assert page.status_code == 303  # still anonymous: sent to sign in


async def test_a_declined_sign_in_stays_signed_out(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("writer")
    github.oauth.declines = True
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret", follow_redirects=True)

    assert page.status_code == 403
    assert "did not sign you in" in page.text
    assert "neo_session" not in client.cookies


@pytest.mark.parametrize(
    "next_path",
    ["//evil.example/x", "https://evil.example/", "/\\evil.example", "evil", "/%0a//evil"],
)
async def test_sign_in_never_sends_the_browser_to_another_site(
    github: FakeGitHub, next_path: str
) -> None:
    github.oauth.sign_in_as("reader")
    async with browser(settings_for(github)) as (client, _):
        ended = await client.get(
            f"{PUBLIC}/auth/github/login", params={"next": next_path}, follow_redirects=True
        )

    landed = ended.history[-1] if ended.history else ended
    assert landed.url.path == "/auth/github/callback"
    assert landed.headers["location"] in ("/runs", "/%0a//evil")
    assert ended.url.host == "neo.test"


async def test_behind_https_the_cookies_are_secure_and_host_bound(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("reader")
    async with browser(settings_for(github, SECURE)) as (client, _):
        page = await client.get(f"{SECURE}/probe/octo/secret", follow_redirects=True)

    assert page.status_code == 200
    signin = _cookies(page.history[0])["__Host-neo_signin"]
    session = _cookies(page.history[2])["__Host-neo_session"]
    for cookie in (signin, session):
        assert cookie["secure"] is True
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "lax"
        assert cookie["path"] == "/"
        assert "domain" not in cookie
    assert parse_qs(urlsplit(page.history[0].headers["location"]).query)["redirect_uri"] == [
        f"{SECURE}/auth/github/callback"
    ]


async def test_signing_out_needs_the_csrf_token_and_ends_the_session(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("reader")
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret", follow_redirects=True)
        forged = await client.post(f"{PUBLIC}/auth/logout", data={"csrf": "nope"})
        out = await client.post(f"{PUBLIC}/auth/logout", data={"csrf": page.json()["csrf"]})
        after = await client.get(f"{PUBLIC}/probe/octo/secret")

    assert forged.status_code == 403
    assert out.status_code == 303
    assert after.status_code == 303  # anonymous again: sent to sign in


async def test_no_token_or_secret_reaches_a_page_a_cookie_or_a_log_line(
    github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    github.oauth.sign_in_as("writer")
    caplog.set_level(logging.DEBUG)
    seen: list[httpx.Response] = []
    async with browser(settings_for(github)) as (client, _):
        page = await client.get(f"{PUBLIC}/probe/octo/secret", follow_redirects=True)
        seen += [*page.history, page]
        seen.append(await client.post(f"{PUBLIC}/probe/octo/secret", data={"csrf": "x"}))
        seen.append(await client.get(f"{PUBLIC}/auth/github/callback?code=spent&state=x"))

    secrets = [*github.oauth.user_tokens, github.oauth.client_secret, "hook-s3cret"]
    assert github.oauth.user_tokens
    everything = "\n".join(
        [r.text + str(r.headers) for r in seen if r.url.host == "neo.test"]
        + [record.getMessage() for record in caplog.records]
    )
    for secret in secrets:
        assert secret not in everything
    assert "signed_in" in everything  # the log does say who signed in


async def test_when_sign_in_is_not_set_up_a_private_run_says_so(github: FakeGitHub) -> None:
    settings = settings_for(github, NEO_GITHUB_CLIENT_ID="", NEO_GITHUB_CLIENT_SECRET="")
    async with browser(settings) as (client, _):
        private = await client.get(f"{PUBLIC}/probe/octo/secret")
        public = await client.get(f"{PUBLIC}/probe/octo/open")
        login = await client.get(f"{PUBLIC}/auth/github/login")

    assert private.status_code == 403
    assert "signing in is not set up" in private.text
    assert public.status_code == 200
    assert login.status_code == 403


async def test_neo_serves_the_sign_in_beside_the_webhooks(
    github: FakeGitHub, tmp_path: Path
) -> None:
    settings = settings_for(github)
    queue = open_queue(sqlite_url(tmp_path / "neo.db"))
    try:
        async with browser(settings) as (_, site):

            async def open_intake() -> AsyncIterator[Intake]:
                yield Intake(b"hook-s3cret", Rules(app_bot_login="neo[bot]"), queue, site)

            app = create_app(open_intake)
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app)
                async with httpx.AsyncClient(mounts={PUBLIC: transport}) as client:
                    login = await client.get(f"{PUBLIC}/auth/github/login?next=/runs/7")
    finally:
        await queue.close()

    assert login.status_code == 303
    assert login.headers["location"].startswith(f"{github.origin}/login/oauth/authorize?")


async def test_a_token_github_no_longer_takes_is_a_sign_in_again(github: FakeGitHub) -> None:
    github.oauth.sign_in_as("writer")
    async with browser(settings_for(github)) as (client, _):
        public = await client.get(f"{PUBLIC}/probe/octo/open", follow_redirects=True)
        assert public.json()["login"] is None
        await client.get(f"{PUBLIC}/auth/github/login?next=/probe/octo/open", follow_redirects=True)
        github.oauth.revoke_user_tokens()  # revoked on GitHub, or expired
        private = await client.get(f"{PUBLIC}/probe/octo/secret")

    assert private.status_code == 303
    assert private.headers["location"].startswith(f"{github.origin}/login/oauth/authorize?")
