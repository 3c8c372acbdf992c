"""The pages' `Door` (bot.runs.pages) over GitHub sign-in and access: who is looking, what
they may do, where an anonymous visitor signs in, and the forms' CSRF tokens.

Needs the run site (`site_of`: the app's `state.runs`, which neo serve sets).
A viewer whose token GitHub now refuses is anonymous again; a GitHub that
does not answer is a 503, not a guess.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from bot.github.errors import GitHubError
from bot.runs.access import SignInExpired, Viewer, access_to
from bot.runs.auth import check_csrf, csrf_token, sign_in_redirect, viewer_of
from bot.runs.pages import Access

__all__ = ["GitHubDoor"]

log = logging.getLogger("neo.runs")


class GitHubDoor:
    """bot.runs.pages.Door for neo serve: the session's viewer, GitHub's word on access."""

    async def viewer(self, request: Request) -> str | None:
        return (await viewer_of(request)).login

    async def access(self, request: Request, viewer: str | None, repository: str) -> Access:
        seen = await viewer_of(request)
        if seen.login != viewer:  # asked about someone else: only what anyone may do
            seen = Viewer(None, gate=seen.gate)
        try:
            granted = await access_to(seen, repository)
        except SignInExpired:
            granted = await access_to(Viewer(None, gate=seen.gate), repository)
        except GitHubError as error:
            log.warning(json.dumps({"event": "access_unknown", "error": str(error)}))
            raise HTTPException(503, "GitHub did not say who may see this; try again.") from None
        return Access(read=granted.read, write=granted.write)

    def sign_in(self, request: Request) -> Response:
        query = request.url.query
        return sign_in_redirect(request, request.url.path + (f"?{query}" if query else ""))

    def csrf_token(self, request: Request) -> str:
        return csrf_token(request)

    def csrf_ok(self, request: Request, form: Mapping[str, str]) -> bool:
        try:
            check_csrf(request, form)
        except HTTPException:
            return False
        return True
