"""The run pages' routes, which `neo serve`'s app mounts beside the webhook intake."""

from __future__ import annotations

from starlette.routing import BaseRoute

from bot.runs.auth import auth_routes

__all__ = ["routes"]


def routes() -> list[BaseRoute]:
    """Every route of the run pages: signing in and out (more as the pages come)."""
    return [*auth_routes()]
