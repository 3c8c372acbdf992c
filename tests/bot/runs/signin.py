"""A run site signed in to the fake GitHub, served to an httpx "browser" over ASGI (the
sign-in tests' helpers; their fixtures are imported by the test modules).

The browser's requests to Neo (`PUBLIC`) go to the app in process; those to
GitHub's web host and API go over HTTP to the fake, whose redirects bring the
browser back, as a real one would be. `/probe/{owner}/{repo}` stands for a run
page: it answers what `require` let through (POST: an action, CSRF-checked).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.config.settings import Settings, load_settings
from bot.github.app import GitHubApp
from bot.queue import JobQueue
from bot.runs import check_csrf, csrf_token, require
from bot.runs.serving import open_site
from bot.runs.site import RunSite
from bot.runs.web import routes
from bot.worker.config import ConfigResolver, ConfigSource
from bot.worker.writers import ConfiguredWriters
from tests.fakes import FakeGitHub

PUBLIC = "http://neo.test"
SECURE = "https://neo.test"


def oauth_github() -> FakeGitHub:
    """A fake GitHub (to start) with the App on octo/secret (private) and octo/open
    (public): reader may read the first, writer write both, and the run site's
    callbacks registered."""
    fake = FakeGitHub(slug="neo")
    fake.install(7, "octo", ["secret", "open"])
    fake.set_public("octo/open")
    fake.set_permission("octo/secret", "reader", "read")
    fake.set_permission("octo/secret", "writer", "write")
    fake.set_permission("octo/open", "writer", "write")
    fake.oauth.callback_urls = [f"{PUBLIC}/auth/github/callback", f"{SECURE}/auth/github/callback"]
    return fake


def settings_for(github: FakeGitHub, public: str = PUBLIC, **extra: str) -> Settings:
    return load_settings(
        {
            "NEO_GITHUB_APP_ID": str(github.app_id),
            "NEO_GITHUB_PRIVATE_KEY": github.private_key_pem,
            "NEO_WEBHOOK_SECRET": "hook-s3cret",
            "NEO_GITHUB_API_URL": github.base_url,
            "NEO_PUBLIC_URL": public,
            "NEO_GITHUB_CLIENT_ID": github.oauth.client_id,
            "NEO_GITHUB_CLIENT_SECRET": github.oauth.client_secret,
            **extra,
        }
    )


async def probe(request: Request) -> Response:
    repository = f"{request.path_params['owner']}/{request.path_params['repo']}"
    seen = await require(request, repository, write=request.method == "POST")
    if request.method == "POST":
        check_csrf(request, await request.form())
    return JSONResponse(
        {
            "login": seen.viewer.login,
            "read": seen.access.read,
            "write": seen.access.write,
            "csrf": csrf_token(request),
        }
    )


def probe_app(site: RunSite) -> Starlette:
    app = Starlette(
        routes=[*routes(), Route("/probe/{owner}/{repo}", probe, methods=["GET", "POST"])]
    )
    app.state.runs = site
    return app


@asynccontextmanager
async def signed_in_browser(
    settings: Settings, queue: JobQueue | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, RunSite]]:
    """A browser on the run site of `settings` (which `neo serve` would make), with
    the run pages of `queue` when given."""
    assert settings.github_private_key is not None
    key = settings.github_private_key.get_secret_value()
    async with GitHubApp(settings.github_app_id, key, settings.github_api_url) as app:
        writers = ConfiguredWriters(app, ConfigResolver(app, ConfigSource(), time.monotonic))
        async with open_site(settings, app, writers, queue) as site:
            transport = httpx.ASGITransport(probe_app(site))
            async with httpx.AsyncClient(
                mounts={settings.public_url: transport}, timeout=10
            ) as client:
                yield client, site
