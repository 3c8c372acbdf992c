"""Neo's GitHub App manifest: the permissions and events the App asks for. Pure data.

Why each permission and event is asked for: docs/architecture.md, "App setup".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

from bot.intake.triggers import ACTED_ON

__all__ = [
    "DEFAULT_NAME",
    "EVENTS",
    "EXAMPLE_WEBHOOK_URL",
    "MAX_NAME_LENGTH",
    "PERMISSIONS",
    "SIGN_IN_CALLBACK",
    "app_manifest",
]

DEFAULT_NAME: Final = "Neo"
# GitHub's limit on an App's name.
MAX_NAME_LENGTH: Final = 34
# The placeholder of docs/app-manifest.json.
EXAMPLE_WEBHOOK_URL: Final = "https://neo.example.com/api/github/webhooks"

DESCRIPTION: Final = (
    "A coding agent: mention it on an issue or pull request and it answers with a "
    "draft pull request and a summary of what it did."
)

PERMISSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "metadata": "read",
        "workflows": "write",
        # CI repair: the failed check runs, their annotations and Actions logs.
        "checks": "read",
        "actions": "read",
    }
)

EVENTS: Final[tuple[str, ...]] = tuple(sorted({key.split(".")[0] for key in ACTED_ON}))


# Where GitHub sends people back after signing in to the run page (bot/runs/auth.py).
SIGN_IN_CALLBACK: Final = "/auth/github/callback"


def app_manifest(
    webhook_url: str,
    *,
    name: str = DEFAULT_NAME,
    redirect_url: str | None = None,
    public_url: str | None = None,
) -> dict[str, Any]:
    """The manifest JSON object for an App whose webhooks go to `webhook_url`.

    The App's homepage is the webhook URL's origin (where Neo is served);
    `redirect_url` is where GitHub sends the browser back with the code to
    exchange, left out when there is no flow to come back to. With
    `public_url` (NEO_PUBLIC_URL), the App's callback URL is the run page's
    sign-in callback. The App is private: only its owner's account can install it.
    """
    parts = urlsplit(webhook_url)
    manifest: dict[str, Any] = {
        "name": name,
        "url": f"{parts.scheme}://{parts.netloc}",
        "description": DESCRIPTION,
        "hook_attributes": {"url": webhook_url, "active": True},
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
    }
    if redirect_url is not None:
        manifest["redirect_url"] = redirect_url
    if public_url:
        manifest["callback_urls"] = [public_url.rstrip("/") + SIGN_IN_CALLBACK]
    return manifest
