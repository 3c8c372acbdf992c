"""The run page: a job's event records, and the web pages, live stream, sign-in and
actions that show them (docs/architecture.md, "The run page")."""

from bot.runs.access import Access, Viewer, access_to
from bot.runs.actions import steer_run, stop_run
from bot.runs.auth import check_csrf, csrf_token, viewer_of
from bot.runs.guard import Seen, require
from bot.runs.site import RunSite, site_of

__all__ = [
    "Access",
    "RunSite",
    "Seen",
    "Viewer",
    "access_to",
    "check_csrf",
    "csrf_token",
    "require",
    "site_of",
    "steer_run",
    "stop_run",
    "viewer_of",
]
