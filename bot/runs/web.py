"""The run pages' routes, which `neo serve`'s app mounts beside the webhook intake."""

from __future__ import annotations

from starlette.routing import BaseRoute

from bot.runs.auth import auth_routes
from bot.runs.pages import run_routes
from bot.runs.site import pages_of

__all__ = ["routes"]


def routes() -> list[BaseRoute]:
    """Every route of the run pages: signing in and out, the runs, their streams and actions."""
    return [*auth_routes(), *run_routes(pages_of)]
