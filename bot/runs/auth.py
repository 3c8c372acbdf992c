"""Signing in with GitHub for the run pages: the OAuth web flow, the session, CSRF.

    GET  /auth/github/login?next=/runs/7   → GitHub's authorize page, with a state
    GET  /auth/github/callback?code&state  → the session cookie, then `next`
    POST /auth/logout                      → no session (a form with `csrf`)

The state is random, kept in a sealed cookie of its own (with `next`) that
lives ten minutes: a callback whose state is not that cookie's, from another
browser or a forged link, is refused. The session cookie holds the login and
the user's token, sealed (`bot.runs.sealed`: encrypted and signed), HttpOnly,
SameSite=Lax, Secure (and `__Host-`) when NEO_PUBLIC_URL is https; it lasts
`SESSION_SECONDS`, or less when the token does. `next` is only ever a path of
this site. Pages call `viewer_of`, `csrf_token` and `check_csrf`; `require`
(bot.runs.guard) turns an anonymous visitor of a private run into a sign-in.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from bot.github.errors import GitHubError
from bot.github.oauth import GitHubUsers, SignInRefused, UserToken
from bot.runs.access import Viewer
from bot.runs.sealed import Sealer
from bot.runs.site import site_of

__all__ = [
    "CALLBACK_PATH",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "LOGIN_PATH",
    "LOGOUT_PATH",
    "SESSION_SECONDS",
    "SignIn",
    "auth_routes",
    "check_csrf",
    "csrf_token",
    "safe_next",
    "sign_in_redirect",
    "viewer_of",
]

log = logging.getLogger("neo.runs")

LOGIN_PATH: Final = "/auth/github/login"
CALLBACK_PATH: Final = "/auth/github/callback"
LOGOUT_PATH: Final = "/auth/logout"
# Where a sign-in without a `next` ends, and a sign-out: the runs the viewer may see.
HOME: Final = "/runs"
CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "x-csrf-token"

# A session lasts a working day at most: GitHub's user tokens live 8 hours.
SESSION_SECONDS: Final = 8 * 3600
# The time to answer GitHub's sign-in page.
STATE_SECONDS: Final = 600
_MAX_NEXT: Final = 2000
# GitHub's codes are hex; anything else in the callback is not GitHub's.
_CODE: Final = re.compile(r"[A-Za-z0-9_-]{1,200}")


@dataclass(frozen=True, slots=True)
class SignIn:
    """What signing in needs: the App's OAuth client, where this site is, the sealer."""

    users: GitHubUsers
    public_url: str  # https://neo.example.com, no trailing slash
    sealer: Sealer
    clock: Callable[[], float] = field(default=time.time, compare=False)

    @property
    def secure(self) -> bool:
        return self.public_url.startswith("https://")

    @property
    def redirect_uri(self) -> str:
        return f"{self.public_url}{CALLBACK_PATH}"

    @property
    def session_cookie(self) -> str:
        # __Host-: a cookie only this origin sets, over TLS, for every path.
        return "__Host-neo_session" if self.secure else "neo_session"

    @property
    def state_cookie(self) -> str:
        return "__Host-neo_signin" if self.secure else "neo_signin"


# --- pure -------------------------------------------------------------------------


def safe_next(text: str | None) -> str:
    """`text` if it is a path of this site (with its query), else the home page.

    Refused: anything with a scheme or a host (`https://evil`, `//evil`,
    `/\\evil`, which browsers read as `//evil`), control characters, or a
    path that does not start with `/`.
    """
    if not text or len(text) > _MAX_NEXT or not text.startswith("/"):
        return HOME
    if "\\" in text or any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        return HOME
    parts = urlsplit(text)
    if parts.scheme or parts.netloc or text.startswith("//"):
        return HOME
    return parts.path + (f"?{parts.query}" if parts.query else "")


# --- the session ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Session:
    login: str
    token: UserToken
    sid: str


def _session(request: Request) -> _Session | None:
    """The request's session, opened once per request."""
    if "neo_session" in request.scope.setdefault("state", {}):
        found: _Session | None = request.scope["state"]["neo_session"]
        return found
    found = None
    sign_in = site_of(request).sign_in
    if sign_in is not None:
        data = sign_in.sealer.open(
            "session", request.cookies.get(sign_in.session_cookie), max_age=SESSION_SECONDS
        )
        found = _read_session(data, sign_in)
    request.scope["state"]["neo_session"] = found
    return found


def _read_session(data: Mapping[str, Any] | None, sign_in: SignIn) -> _Session | None:
    if data is None:
        return None
    login, token, sid, expires = (
        data.get("login"),
        data.get("token"),
        data.get("sid"),
        data.get("exp"),
    )
    if not (isinstance(login, str) and isinstance(token, str) and isinstance(sid, str)):
        return None
    if expires is not None and (not isinstance(expires, int | float) or expires <= sign_in.clock()):
        return None  # the token is spent: sign in again
    return _Session(login, UserToken(token, expires), sid)


async def viewer_of(request: Request) -> Viewer:
    """Who is looking: the session's login, or anonymous; with what `access_to` needs."""
    site = site_of(request)
    session = _session(request)
    if session is None:
        return Viewer(None, gate=site.gate)
    return Viewer(session.login, token=session.token, gate=site.gate)


def csrf_token(request: Request) -> str:
    """The token a form of this session posts as `csrf` (or a script as X-CSRF-Token).

    Anonymous visitors have none (""): nothing they could post is allowed.
    """
    session = _session(request)
    sign_in = site_of(request).sign_in
    if session is None or sign_in is None:
        return ""
    return sign_in.sealer.mac("csrf", session.sid)


def check_csrf(request: Request, form: Mapping[str, Any] | None = None) -> None:
    """Raise HTTPException(403) unless the request carries this session's CSRF token.

    The token comes from `form`'s `csrf` field, else the X-CSRF-Token header.
    A request whose Origin is another site's is refused whatever it carries.
    """
    expected = csrf_token(request)
    origin = request.headers.get("origin")
    public = site_of(request).public_url
    if origin is not None and public and origin.rstrip("/") != public:
        raise HTTPException(403, "This form was sent from another site.")
    given = form.get(CSRF_FIELD) if form is not None else None
    if not isinstance(given, str):
        given = request.headers.get(CSRF_HEADER, "")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(403, "This form has expired: reload the page and try again.")


# --- the routes -------------------------------------------------------------------


def sign_in_redirect(request: Request, next_path: str) -> Response:
    """A 303 to GitHub's authorize page, with the state cookie that binds it to
    this browser; a 403 when sign-in is not set up on this server."""
    sign_in = site_of(request).sign_in
    if sign_in is None:
        return _plain(
            403,
            "Signing in is not set up on this server: its operator sets NEO_PUBLIC_URL, "
            "NEO_GITHUB_CLIENT_ID and NEO_GITHUB_CLIENT_SECRET (docs/run-page.md).",
        )
    state = secrets.token_urlsafe(32)
    response = RedirectResponse(
        sign_in.users.authorize_url(sign_in.redirect_uri, state), status_code=303
    )
    sealed = sign_in.sealer.seal("state", {"state": state, "next": safe_next(next_path)})
    _cookie(response, sign_in, sign_in.state_cookie, sealed, STATE_SECONDS)
    response.headers["cache-control"] = "no-store"
    return response


async def _login(request: Request) -> Response:
    return sign_in_redirect(request, request.query_params.get("next", HOME))


async def _callback(request: Request) -> Response:
    sign_in = site_of(request).sign_in
    if sign_in is None:
        return _plain(404, "Signing in is not set up on this server.")
    sealed = request.cookies.get(sign_in.state_cookie)
    started = sign_in.sealer.open("state", sealed, max_age=STATE_SECONDS)
    state = request.query_params.get("state", "")
    expected = started.get("state") if started is not None else None
    if not isinstance(expected, str) or not hmac.compare_digest(state.encode(), expected.encode()):
        # Another browser's link, a forged one, or a sign-in left too long.
        return _refused(
            sign_in, 400, "This sign-in did not start in this browser, or took too long."
        )
    assert started is not None
    next_path = safe_next(started.get("next"))
    if request.query_params.get("error"):
        return _refused(sign_in, 403, "GitHub did not sign you in (the request was declined).")
    code = request.query_params.get("code", "")
    if not _CODE.fullmatch(code):
        return _refused(sign_in, 400, "GitHub's answer carried no usable code.")
    try:
        token = await sign_in.users.exchange(code, sign_in.redirect_uri)
        login = await sign_in.users.login(token)
    except SignInRefused as error:
        log.info(json.dumps({"event": "sign_in_refused", "error": error.error}))
        return _refused(sign_in, 400, "GitHub refused the sign-in (the code expired or was used).")
    except GitHubError as error:
        log.warning(json.dumps({"event": "sign_in_failed", "status": error.status}))
        return _refused(sign_in, 502, "GitHub did not answer the sign-in; try again.")
    session = {"login": login, "token": token.token, "exp": token.expires_at}
    session["sid"] = secrets.token_urlsafe(16)
    response = RedirectResponse(next_path, status_code=303)
    lifetime = SESSION_SECONDS
    if token.expires_at is not None:
        lifetime = max(0, min(lifetime, int(token.expires_at - sign_in.clock())))
    _cookie(
        response, sign_in, sign_in.session_cookie, sign_in.sealer.seal("session", session), lifetime
    )
    response.delete_cookie(sign_in.state_cookie, path="/", secure=sign_in.secure, httponly=True)
    response.headers["cache-control"] = "no-store"
    log.info(json.dumps({"event": "signed_in", "login": login}))
    return response


async def _logout(request: Request) -> Response:
    sign_in = site_of(request).sign_in
    response = RedirectResponse(HOME, status_code=303)
    if sign_in is None or _session(request) is None:
        return response
    form = await _small_form(request)
    check_csrf(request, form)
    response.delete_cookie(
        sign_in.session_cookie, path="/", secure=sign_in.secure, httponly=True, samesite="lax"
    )
    return response


def auth_routes() -> list[BaseRoute]:
    return [
        Route(LOGIN_PATH, _login, methods=["GET"]),
        Route(CALLBACK_PATH, _callback, methods=["GET"]),
        Route(LOGOUT_PATH, _logout, methods=["POST"]),
    ]


# --- helpers ----------------------------------------------------------------------


def _cookie(response: Response, sign_in: SignIn, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        secure=sign_in.secure,
        httponly=True,
        samesite="lax",
    )


def _refused(sign_in: SignIn, status: int, message: str) -> Response:
    response = _plain(status, f"{message} Sign in again: {LOGIN_PATH}")
    response.delete_cookie(sign_in.state_cookie, path="/", secure=sign_in.secure, httponly=True)
    return response


def _plain(status: int, text: str) -> Response:
    return PlainTextResponse(
        text + "\n",
        status_code=status,
        headers={"cache-control": "no-store", "referrer-policy": "no-referrer"},
    )


async def _small_form(request: Request) -> dict[str, str]:
    """A urlencoded form of at most a few KB (the logout's: its CSRF token)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > 8192:
            raise HTTPException(413, "The form is too large.")
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in fields.items() if values}
