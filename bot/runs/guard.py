"""The check every run page and action starts with: `require`.

    seen = await require(request, job.request.thread.repository,
                         installation_id=job.request.installation_id)
    seen = await require(request, repo, write=True)   # Stop, Steer (then check_csrf)

Anyone may read a public repository's runs. An anonymous visitor of a
private one is sent to sign in (a 303 to GitHub, coming back to this page);
a signed-in viewer without access gets 403; writing needs `@neo`'s rule.
Refusals are Starlette's HTTPException, which the app answers as it is.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from bot.github.errors import GitHubError
from bot.runs.access import Access, SignInExpired, Viewer, access_to
from bot.runs.auth import sign_in_redirect, viewer_of
from bot.runs.site import site_of

__all__ = ["Seen", "require"]

log = logging.getLogger("neo.runs")


@dataclass(frozen=True, slots=True)
class Seen:
    """A request let through: who is looking and what they may do."""

    viewer: Viewer
    access: Access


async def require(
    request: Request, repository: str, *, write: bool = False, installation_id: int | None = None
) -> Seen:
    """The viewer and their access to `repository`'s runs, if they may read them
    (and write, with `write`); else raises the HTTPException to answer with."""
    viewer = await viewer_of(request)
    try:
        access = await access_to(viewer, repository, installation_id=installation_id)
    except SignInExpired:
        access, viewer = Access(read=False, write=False), Viewer(None, gate=viewer.gate)
    except GitHubError as error:
        log.warning(json.dumps({"event": "access_unknown", "error": str(error)}))
        raise HTTPException(503, "GitHub did not say who may see this; try again.") from None
    if access.write or (access.read and not write):
        return Seen(viewer, access)
    if viewer.login is None and site_of(request).sign_in is None:
        raise HTTPException(
            403, "This repository is private, and signing in is not set up on this server."
        )
    if viewer.login is None and request.method in ("GET", "HEAD"):
        # A browser visiting: sign in, and come back here.
        query = request.url.query
        here = request.url.path + (f"?{query}" if query else "")
        response = sign_in_redirect(request, here)
        raise HTTPException(response.status_code, headers=_headers(response))
    if viewer.login is None:
        raise HTTPException(403, "Sign in to do this.")
    if access.read:
        raise HTTPException(403, f"{viewer.login} may not stop or steer runs here.")
    raise HTTPException(403, f"{viewer.login} may not see this repository's runs.")


def _headers(response: Response) -> dict[str, str]:
    wanted = ("location", "set-cookie", "cache-control")
    return {name: value for name, value in response.headers.items() if name in wanted}
