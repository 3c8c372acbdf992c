"""The run site of `neo serve`, made from its settings and the App it signed in as."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.config.settings import Settings
from bot.github.app import GitHubApp, load_private_key
from bot.github.oauth import GitHubUsers
from bot.github.visibility import visibility
from bot.queue import JobQueue
from bot.runs.access import Gate, Writers
from bot.runs.auth import SignIn
from bot.runs.door import GitHubDoor
from bot.runs.feeds import Feeds
from bot.runs.pages import Site
from bot.runs.sealed import Sealer, derived_secret
from bot.runs.site import RunSite

__all__ = ["open_site", "session_secret"]


def session_secret(settings: Settings) -> bytes:
    """NEO_SESSION_SECRET, or one derived from the App's key, webhook and client secrets."""
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value().strip().encode()
    key = settings.github_private_key
    pem = load_private_key(
        key.get_secret_value() if key else None,
        str(settings.github_private_key_path) if settings.github_private_key_path else None,
    )
    client = settings.github_client_secret
    return derived_secret(
        pem.encode(),
        settings.webhook_secret.get_secret_value().encode(),
        client.get_secret_value().encode() if client else b"",
    )


@asynccontextmanager
async def open_site(
    settings: Settings,
    app: GitHubApp,
    writers: Writers,
    queue: JobQueue | None = None,
    closing: asyncio.Event | None = None,
) -> AsyncIterator[RunSite]:
    """The run site for the server's lifetime; its connections to GitHub closed after.

    With a `queue`, the run pages too; `closing` is set when the server begins
    to shut down, so their live streams end instead of holding it up."""
    users: GitHubUsers | None = None
    secret = settings.github_client_secret
    if settings.sign_in and secret is not None:
        users = GitHubUsers(
            api_url=settings.github_api_url,
            web_url=settings.github_web,
            client_id=settings.github_client_id,
            client_secret=secret.get_secret_value().strip(),
        )
    try:
        sign_in = (
            None
            if users is None
            else SignIn(users, settings.public_url, Sealer(session_secret(settings)))
        )
        gate = Gate(functools.partial(visibility, app), writers, users)
        pages = None
        if queue is not None:
            closing = closing or asyncio.Event()
            pages = Site(queue, GitHubDoor(), settings.github_web, closing, Feeds(queue))
        try:
            yield RunSite(
                gate=gate,
                sign_in=sign_in,
                public_url=settings.public_url,
                queue=queue,
                pages=pages,
            )
        finally:
            if pages is not None:
                await pages.feeds.close()
    finally:
        if users is not None:
            await users.aclose()
