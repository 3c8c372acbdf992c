"""A wire-level fake of OpenAI's ChatGPT sign-in service, for tests.

Serves on 127.0.0.1 what Neo's device-code login and refresh call:

- `POST /api/accounts/deviceauth/usercode` (JSON `client_id`): a device auth id,
  a user code and the polling interval (a string, as the real service sends it);
- `POST /api/accounts/deviceauth/token` (JSON `device_auth_id`, `user_code`): each
  poll takes the next scripted state (`PENDING` is a 403, `SLOW_DOWN`, `EXPIRED`
  and `DENIED` OAuth-style 400s); once the script is empty the code is approved
  and the answer carries an authorization code and its PKCE verifier;
- `POST /oauth/token`: the form-encoded `authorization_code` grant and the JSON
  `refresh_token` grant, both issuing JWT-shaped tokens (an id token with the
  ChatGPT account claim, an access token with `exp`). Refresh tokens are
  single-use, as OpenAI's are. With `hold_refreshes` set, a refresh is answered
  only once a second one has come or that many seconds have passed, so two
  clients that race for one refresh token both reach the service;
- `POST /oauth/revoke` (JSON `token`, `token_type_hint`, `client_id`): RFC 7009's
  revocation, 200 whether or not the token was live; a revoked refresh token
  can no longer refresh, and the access token issued with it is refused.

    with FakeChatGPTAuth() as auth:
        auth.script_polls(PENDING, SLOW_DOWN)
        env = auth.env   # NEO_CHATGPT_AUTH_URL
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.threaded import Served

__all__ = [
    "CLIENT_ID",
    "DENIED",
    "EXPIRED",
    "PENDING",
    "SLOW_DOWN",
    "AuthRequest",
    "FakeChatGPTAuth",
    "make_jwt",
]

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
PENDING = "pending"
SLOW_DOWN = "slow_down"
EXPIRED = "expired"
DENIED = "denied"
_AUTH_CLAIM = "https://api.openai.com/auth"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(claims: dict[str, Any]) -> str:
    """A token shaped like a JWT; the signature is noise, as nothing here verifies it."""
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64(secrets.token_bytes(32))}"


@dataclass(frozen=True, slots=True)
class AuthRequest:
    path: str
    content_type: str
    body: dict[str, Any]


@dataclass(slots=True)
class _Device:
    device_auth_id: str
    user_code: str
    authorization_code: str
    code_verifier: str


@dataclass(slots=True)
class _State:
    devices: dict[str, _Device] = field(default_factory=dict)
    codes: dict[str, _Device] = field(default_factory=dict)
    refresh_tokens: set[str] = field(default_factory=set)
    access_tokens: list[str] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)
    # Each refresh token's access token, issued together.
    grants: dict[str, str] = field(default_factory=dict)
    refreshes_seen: int = 0


class FakeChatGPTAuth(Served):
    """The fake sign-in service in a background thread; a context manager.

    `access_lifetime`: seconds until an issued access token's `exp`.
    `interval`: the polling interval the user-code answer gives.
    """

    _label = "the fake ChatGPT auth service"

    def __init__(
        self,
        *,
        account_id: str = "acct-fake-0001",
        access_lifetime: float = 3600.0,
        interval: str = "0",
    ) -> None:
        self.account_id = account_id
        self.access_lifetime = access_lifetime
        self.interval = interval
        # Revoke every access token as it is issued: a backend that refuses the account.
        self.revoke_new = False
        # Seconds a refresh waits for a second one before it is answered.
        self.hold_refreshes = 0.0
        self.requests: list[AuthRequest] = []
        self._polls: deque[str] = deque()
        self._state = _State()
        self._lock = threading.Lock()
        routes = [
            Route("/api/accounts/deviceauth/usercode", self._user_code, methods=["POST"]),
            Route("/api/accounts/deviceauth/token", self._poll, methods=["POST"]),
            Route("/oauth/token", self._token, methods=["POST"]),
            Route("/oauth/revoke", self._revoke, methods=["POST"]),
        ]
        self._serve(Starlette(routes=routes), "fake-chatgpt-auth")

    # --- what a test sets up and reads ----------------------------------------

    def script_polls(self, *states: str) -> None:
        with self._lock:
            self._polls.extend(states)

    @property
    def url(self) -> str:
        return self.origin

    @property
    def env(self) -> dict[str, str]:
        return {"NEO_CHATGPT_AUTH_URL": self.url}

    @property
    def live_access_tokens(self) -> set[str]:
        """Access tokens issued and not revoked: what the backend fake accepts."""
        with self._lock:
            return set(self._state.access_tokens) - self._state.revoked

    @property
    def issued_access_tokens(self) -> list[str]:
        with self._lock:
            return list(self._state.access_tokens)

    def revoke(self, access_token: str) -> None:
        with self._lock:
            self._state.revoked.add(access_token)

    def issue(self, *, lifetime: float | None = None) -> dict[str, Any]:
        """A token answer, as if a sign-in had just happened (for stored-credential tests)."""
        with self._lock:
            return self._issue_locked(lifetime)

    def polls(self) -> list[AuthRequest]:
        return [r for r in self.requests if r.path.endswith("/deviceauth/token")]

    def revocations(self) -> list[AuthRequest]:
        return [r for r in self.requests if r.path == "/oauth/revoke"]

    def refreshes(self) -> int:
        return sum(1 for r in self.requests if r.body.get("grant_type") == "refresh_token")

    # --- the endpoints --------------------------------------------------------

    async def _read(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        content_type = request.headers.get("content-type", "")
        body: Any
        if content_type.startswith("application/x-www-form-urlencoded"):
            body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        else:
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
        fields: dict[str, Any] = body if isinstance(body, dict) else {}
        self.requests.append(AuthRequest(request.url.path, content_type, fields))
        return fields

    async def _user_code(self, request: Request) -> Response:
        body = await self._read(request)
        if body.get("client_id") != CLIENT_ID:
            return JSONResponse({"error": "invalid_client"}, 400)
        device = _Device(
            device_auth_id="deviceauth_" + secrets.token_hex(8),
            user_code=f"{secrets.token_hex(2).upper()}-{secrets.token_hex(3).upper()}",
            authorization_code="ac_" + secrets.token_hex(16),
            code_verifier=secrets.token_urlsafe(32),
        )
        with self._lock:
            self._state.devices[device.device_auth_id] = device
        return JSONResponse(
            {
                "device_auth_id": device.device_auth_id,
                "user_code": device.user_code,
                "interval": self.interval,
            }
        )

    async def _poll(self, request: Request) -> Response:
        body = await self._read(request)
        with self._lock:
            device = self._state.devices.get(str(body.get("device_auth_id")))
            if device is None or body.get("user_code") != device.user_code:
                return JSONResponse({"error": "invalid_request"}, 400)
            state = self._polls.popleft() if self._polls else None
            if state is None:
                self._state.codes[device.authorization_code] = device
        if state == PENDING:
            return JSONResponse(
                {"error": {"message": "Device authorization is pending", "code": "pending"}}, 403
            )
        if state == SLOW_DOWN:
            return JSONResponse({"error": "slow_down"}, 400)
        if state == EXPIRED:
            return JSONResponse({"error": "expired_token"}, 400)
        if state == DENIED:
            return JSONResponse({"error": "access_denied"}, 400)
        return JSONResponse(
            {
                "authorization_code": device.authorization_code,
                "code_challenge": _b64(secrets.token_bytes(32)),
                "code_verifier": device.code_verifier,
            }
        )

    async def _token(self, request: Request) -> Response:
        body = await self._read(request)
        grant = body.get("grant_type")
        if body.get("client_id") != CLIENT_ID:
            return _invalid("invalid_client", "Unknown client.")
        if grant == "refresh_token" and self.hold_refreshes:
            await self._hold()
        with self._lock:
            if grant == "authorization_code":
                device = self._state.codes.pop(str(body.get("code")), None)
                if (
                    device is None
                    or body.get("code_verifier") != device.code_verifier
                    or body.get("redirect_uri") != f"{self.url}/deviceauth/callback"
                ):
                    return _invalid("invalid_grant", "Invalid authorization code.")
                return JSONResponse(self._issue_locked(None))
            if grant == "refresh_token":
                token = str(body.get("refresh_token"))
                if token not in self._state.refresh_tokens:
                    return _invalid(
                        "refresh_token_reused", "Your refresh token has already been used."
                    )
                self._state.refresh_tokens.discard(token)
                return JSONResponse(self._issue_locked(None))
        return _invalid("unsupported_grant_type", "Unsupported grant type.")

    async def _hold(self) -> None:
        with self._lock:
            self._state.refreshes_seen += 1
        deadline = time.monotonic() + self.hold_refreshes
        while time.monotonic() < deadline:
            with self._lock:
                if self._state.refreshes_seen >= 2:
                    return
            await asyncio.sleep(0.01)

    async def _revoke(self, request: Request) -> Response:
        body = await self._read(request)
        if not request.headers.get("content-type", "").startswith("application/json"):
            return _invalid("invalid_request", "Expected a JSON body.")
        token = body.get("token")
        if not isinstance(token, str) or not token:
            return _invalid("invalid_request", "Missing token.")
        if body.get("token_type_hint") == "refresh_token" and body.get("client_id") != CLIENT_ID:
            return _invalid("invalid_client", "Unknown client.")
        with self._lock:
            if token in self._state.refresh_tokens:
                self._state.refresh_tokens.discard(token)
                self._state.revoked.add(self._state.grants[token])
            elif token in self._state.access_tokens:
                self._state.revoked.add(token)
        return JSONResponse({})

    def _issue_locked(self, lifetime: float | None) -> dict[str, Any]:
        now = time.time()
        life = self.access_lifetime if lifetime is None else lifetime
        auth = {"chatgpt_account_id": self.account_id, "chatgpt_plan_type": "plus"}
        access = make_jwt({"exp": int(now + life), _AUTH_CLAIM: auth, "jti": secrets.token_hex(8)})
        id_token = make_jwt({"email": "dev@example.com", _AUTH_CLAIM: auth, "exp": int(now + life)})
        refresh = "rt_" + secrets.token_urlsafe(24)
        self._state.access_tokens.append(access)
        if self.revoke_new:
            self._state.revoked.add(access)
        self._state.refresh_tokens.add(refresh)
        self._state.grants[refresh] = access
        return {
            "id_token": id_token,
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": int(life),
            "token_type": "Bearer",
        }


def _invalid(code: str, description: str) -> Response:
    return JSONResponse({"error": code, "error_description": description}, 400)
