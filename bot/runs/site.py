"""What the run pages work with, made once by `neo serve`: `RunSite`, and how a route finds it.

The app keeps it as `app.state.runs` (bot/intake/server.py sets it from the
intake); a route asks `site_of(request)`. Without one (a server built
without the run page), every run page answers 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import Request

from bot.queue import JobQueue

if TYPE_CHECKING:
    from bot.runs.access import Gate
    from bot.runs.auth import SignIn
    from bot.runs.pages import Site

__all__ = ["RunSite", "pages_of", "site_of"]


@dataclass(frozen=True, slots=True)
class RunSite:
    """The run pages' parts: access decisions, sign-in (None: not set up), the queue."""

    gate: Gate
    sign_in: SignIn | None
    # NEO_PUBLIC_URL ("" when unset): links, and the origin forms must come from.
    public_url: str
    # The queue the pages read jobs and events from.
    queue: JobQueue | None = None
    # What the run pages' routes work with (bot.runs.pages); None: no pages, sign-in only.
    pages: Site | None = None


def site_of(request: Request) -> RunSite:
    """The site of the app serving `request`; 404 when it serves no run pages."""
    site = getattr(request.app.state, "runs", None)
    if not isinstance(site, RunSite):
        raise HTTPException(404)
    return site


def pages_of(request: Request) -> Site:
    """The pages' site of the app serving `request`; 404 when it serves no run pages."""
    pages = site_of(request).pages
    if pages is None:
        raise HTTPException(404)
    return pages
