"""The App manifest flow's call to GitHub: the redirect's code exchanged for the new App.

`POST /app-manifests/{code}/conversions` works once per code, so it is never
retried. A failure is GitHub's answer as `bot.github.core` classifies it; a
connection lost after the request went out is `ConversionUnknown`, since
GitHub may have used the code and created the App.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import httpx
from githubkit import GitHub
from githubkit.exception import RequestError, RequestFailed, RequestTimeout

from bot.github.core import Retry, api_version, classify, connection_failure
from bot.github.errors import GitHubError

__all__ = ["CONVERSION_PATH", "ConversionUnknown", "NewApp", "convert_manifest_code"]

# Errors name the route, never the code: it is a credential until used.
CONVERSION_PATH: Final = "/app-manifests/{code}/conversions"
# Failures before a byte of the request left: the code is unspent.
_NOT_SENT: Final = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
)


@dataclass(frozen=True, slots=True)
class NewApp:
    """What GitHub answers the conversion with, as far as Neo keeps it."""

    app_id: int
    name: str
    html_url: str
    pem: str = field(repr=False)
    webhook_secret: str | None = field(repr=False)
    # The App's OAuth client: what people sign in to the run page with.
    client_id: str = ""
    client_secret: str = field(default="", repr=False)

    @property
    def install_url(self) -> str:
        """Where the owner installs the new App on repositories."""
        return f"{self.html_url.rstrip('/')}/installations/new"


class ConversionUnknown(GitHubError):
    """The code went out and no answer came back: GitHub may have created the App."""


def convert_manifest_code(
    api_url: str, code: str, *, timeout: float = 30.0, now: Callable[[], float] = time.time
) -> NewApp:
    """The new App's credentials for `code`; one attempt, whatever happens.

    Raises GitHubError (with GitHub's status, or none when it could not be
    reached) or ConversionUnknown. GitHub needs no credentials for this call.
    """
    github = GitHub(
        base_url=api_url,
        user_agent="neo-setup-app",
        timeout=timeout,
        http_cache=False,
        auto_retry=False,  # a second POST of a spent code could only fail
    )
    version = api_version(api_url)
    headers = {"X-GitHub-Api-Version": version} if version is not None else None
    try:
        data = github.rest.apps.create_from_manifest(code, headers=headers).parsed_data
    except RequestFailed as failed:
        raw = failed.response.raw_response
        decision = classify(
            "POST",
            CONVERSION_PATH,
            raw.status_code,
            raw.headers,
            raw.content,
            now=now(),
            reason=raw.reason_phrase,
        )
        raise (decision.error if isinstance(decision, Retry) else decision) from None
    except RequestError as error:  # RequestTimeout included
        reason = None if isinstance(error, RequestTimeout) else type(error.exc).__name__
        if isinstance(error.exc, _NOT_SENT):
            raise connection_failure("POST", CONVERSION_PATH, reason).error from None
        what = "no answer in time" if reason is None else f"the connection failed ({reason})"
        raise ConversionUnknown(
            f"github: POST {CONVERSION_PATH}: {what} after the code was sent"
        ) from None
    except ValueError:  # pydantic's: not the shape GitHub answers with
        raise GitHubError(f"github: the answer to POST {CONVERSION_PATH} is not GitHub's") from None
    return NewApp(
        app_id=data.id,
        name=data.name,
        html_url=data.html_url,
        pem=data.pem,
        webhook_secret=data.webhook_secret,
        client_id=data.client_id,
        client_secret=data.client_secret,
    )
