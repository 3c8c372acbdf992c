"""GitHub's OAuth web flow for a GitHub App, as `FakeGitHub` serves it on its web host.

    github.oauth.callback_urls = [f"{neo}/auth/github/callback"]
    github.oauth.sign_in_as("alice")          # who is signed in to GitHub in "the browser"

`GET /login/oauth/authorize` and `POST /login/oauth/access_token` are not
REST endpoints, so GitHub's OpenAPI description does not cover them: they
are checked here against GitHub's documentation of the web flow
("Generating a user access token for a GitHub App"):

- authorize takes `client_id` (the App's, else 404), `redirect_uri` (one of
  the App's callback URLs, else GitHub's error page), `state`; a user who is
  signed in and has authorized the App before is sent straight back to
  `redirect_uri?code=…&state=…` (the fake auto-approves `sign_in_as`'s
  user), one who declines with `error=access_denied`; no one signed in sees
  the sign-in page (200);
- access_token takes `client_id`, `client_secret`, `code` and
  `redirect_uri` as a form or JSON; a code works once, for ten minutes, with
  the `redirect_uri` it was issued for. Failures are 200 answers with an
  `error` (`incorrect_client_credentials`, `bad_verification_code`,
  `redirect_uri_mismatch`), as GitHub sends them; the answer is JSON when
  asked with `Accept: application/json`, else a form.

User tokens (`ghu_…`, 8 hours) open `GET /user` and `GET /repos/{owner}/{repo}`
(the user's view: 404 for a private repository they have no role on, or
one the App is not installed on) through FakeGitHub's REST side.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

__all__ = ["CODE_SECONDS", "USER_TOKEN_SECONDS", "Exchange", "FakeOAuth"]

CODE_SECONDS = 600
USER_TOKEN_SECONDS = 8 * 3600
_ERROR_URI = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One POST to access_token: what was sent (the secret's check, not the secret)."""

    fields: frozenset[str]
    client_secret_ok: bool
    content_type: str
    accept: str
    error: str | None


@dataclass
class _Code:
    login: str
    redirect_uri: str
    expires: float


@dataclass
class FakeOAuth:
    client_id: str
    client_secret: str = field(default_factory=lambda: secrets.token_hex(20), repr=False)
    callback_urls: list[str] = field(default_factory=list)
    # Who is signed in to GitHub in the browser; None: GitHub shows its sign-in page.
    signed_in: str | None = None
    # The signed-in user declines to authorize the App.
    declines: bool = False
    exchanges: list[Exchange] = field(default_factory=list)
    authorize_queries: list[dict[str, str]] = field(default_factory=list)
    _codes: dict[str, _Code] = field(default_factory=dict, repr=False)
    _tokens: dict[str, tuple[str, float]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sign_in_as(self, login: str | None) -> None:
        self.signed_in = login

    def user_of(self, token: str) -> str | None:
        """The login a live user token acts for."""
        with self._lock:
            found = self._tokens.get(token)
        if found is None or found[1] <= time.time():
            return None
        return found[0]

    def revoke_user_tokens(self) -> None:
        with self._lock:
            self._tokens.clear()

    @property
    def user_tokens(self) -> list[str]:
        with self._lock:
            return list(self._tokens)

    # -- the web endpoints --

    async def authorize(self, request: Request) -> Response:
        query = dict(request.query_params)
        self.authorize_queries.append(query)
        if query.get("client_id") != self.client_id:
            return HTMLResponse("<h1>404</h1><p>Not Found</p>", status_code=404)
        redirect_uri = query.get("redirect_uri") or (self.callback_urls or [""])[0]
        if redirect_uri not in self.callback_urls:
            return HTMLResponse(
                "<h1>Be careful!</h1>"
                "<p>The redirect_uri is not associated with this application.</p>",
                status_code=400,
            )
        if self.signed_in is None:
            return HTMLResponse("<h1>Sign in to GitHub</h1>")
        state = query.get("state")
        if self.declines:
            back = {
                "error": "access_denied",
                "error_description": "The user has denied your application access.",
                "error_uri": _ERROR_URI,
            }
        else:
            code = secrets.token_hex(10)
            with self._lock:
                self._codes[code] = _Code(self.signed_in, redirect_uri, time.time() + CODE_SECONDS)
            back = {"code": code}
        if state is not None:
            back["state"] = state
        return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", status_code=302)

    async def access_token(self, request: Request) -> Response:
        content_type = request.headers.get("content-type", "")
        raw = await request.body()
        data: dict[str, Any]
        if content_type.startswith("application/json"):
            try:
                loaded = json.loads(raw)
            except ValueError:
                loaded = None
            data = loaded if isinstance(loaded, dict) else {}
        else:
            data = dict(parse_qsl(raw.decode("utf-8", "replace")))
        data.update({k: v for k, v in request.query_params.items() if k not in data})
        accept = request.headers.get("accept", "")
        secret_ok = data.get("client_secret") == self.client_secret
        answer = self._exchange(data, secret_ok)
        self.exchanges.append(
            Exchange(frozenset(data), secret_ok, content_type, accept, answer.get("error"))
        )
        if "application/json" in accept:
            return JSONResponse(answer)
        return Response(urlencode(answer), media_type="application/x-www-form-urlencoded")

    def _exchange(self, data: dict[str, Any], secret_ok: bool) -> dict[str, Any]:
        if data.get("client_id") != self.client_id or not secret_ok:
            return _error(
                "incorrect_client_credentials",
                "The client_id and/or client_secret passed are incorrect.",
            )
        with self._lock:
            code = self._codes.pop(str(data.get("code")), None)
        if code is None or code.expires <= time.time():
            return _error("bad_verification_code", "The code passed is incorrect or expired.")
        if data.get("redirect_uri", code.redirect_uri) != code.redirect_uri:
            return _error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
            )
        token = "ghu_" + secrets.token_hex(18)
        with self._lock:
            self._tokens[token] = (code.login, time.time() + USER_TOKEN_SECONDS)
        return {
            "access_token": token,
            "expires_in": USER_TOKEN_SECONDS,
            "refresh_token": "ghr_" + secrets.token_hex(30),
            "refresh_token_expires_in": 15_897_600,
            "scope": "",
            "token_type": "bearer",
        }


def _error(error: str, description: str) -> dict[str, Any]:
    return {"error": error, "error_description": description, "error_uri": _ERROR_URI}
