"""The ChatGPT sign-in over HTTP: the device-code flow, the code exchange, refresh, revocation.

A thin shell around `device_flow`'s pure decisions. Waits go through an
injected `sleep` and deadlines through an injected clock, so tests never wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from runner.auth.credentials import Credentials, credentials_from_tokens
from runner.auth.device_flow import (
    CLIENT_ID,
    LOGIN_TIMEOUT,
    SLOW_DOWN_STEP,
    Approved,
    DeviceCode,
    Pending,
    SlowDown,
    exchange_form,
    parse_device_code,
    poll_outcome,
    refresh_body,
    revoke_body,
    token_error,
)
from runner.auth.endpoints import Endpoints
from runner.auth.errors import LOGIN_HINT, AuthError

__all__ = [
    "exchange_code",
    "refresh",
    "request_device_code",
    "revoke",
    "sign_in",
    "wait_for_approval",
]

_TIMEOUT = 30.0
# A sign-out does not wait long on a revocation that is only best effort.
REVOKE_TIMEOUT = 10.0


def client(timeout: float = _TIMEOUT) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False)


async def _post(http: httpx.AsyncClient, url: str, **kwargs: Any) -> tuple[int, Any]:
    try:
        response = await http.post(url, **kwargs)
    except httpx.HTTPError as error:
        host = httpx.URL(url).host
        raise AuthError(f"chatgpt sign-in: cannot reach {host} ({type(error).__name__})") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    return response.status_code, body


async def request_device_code(http: httpx.AsyncClient, ends: Endpoints) -> DeviceCode:
    status, body = await _post(http, ends.user_code, json={"client_id": CLIENT_ID})
    if status == 404:
        raise AuthError("chatgpt sign-in: device code sign-in is not enabled at this address")
    if status != 200:
        raise AuthError(f"chatgpt sign-in: the device code request failed with HTTP {status}")
    return parse_device_code(body, ends.verification)


async def wait_for_approval(
    http: httpx.AsyncClient,
    ends: Endpoints,
    code: DeviceCode,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    timeout: float = LOGIN_TIMEOUT,
) -> Approved:
    """Poll at the code's interval (longer after `slow_down`) until it is approved."""
    deadline = clock() + timeout
    interval = code.interval
    poll = {"device_auth_id": code.device_auth_id, "user_code": code.user_code}
    while True:
        outcome = poll_outcome(*await _post(http, ends.device_token, json=poll))
        if isinstance(outcome, Approved):
            return outcome
        if isinstance(outcome, SlowDown):
            interval += SLOW_DOWN_STEP
        assert isinstance(outcome, Pending | SlowDown)
        left = deadline - clock()
        if left <= 0:
            raise AuthError(
                f"chatgpt sign-in: the code was not approved within "
                f"{timeout / 60:g} minutes ({LOGIN_HINT} again)"
            )
        await sleep(min(interval, left))


async def _token_request(http: httpx.AsyncClient, url: str, what: str, **kwargs: Any) -> Any:
    status, body = await _post(http, url, **kwargs)
    if status != 200:
        hint = f" ({LOGIN_HINT})" if status in (400, 401, 403) else ""
        raise AuthError(f"chatgpt sign-in: {what} refused: {token_error(status, body)}{hint}")
    if not isinstance(body, dict):
        raise AuthError(f"chatgpt sign-in: the {what} answer is not a JSON object")
    return body


async def exchange_code(
    http: httpx.AsyncClient, ends: Endpoints, approved: Approved, *, now: float
) -> Credentials:
    body = await _token_request(
        http, ends.oauth_token, "code exchange", data=exchange_form(approved, ends.redirect_uri)
    )
    return credentials_from_tokens(body, now=now)


async def refresh(
    http: httpx.AsyncClient, ends: Endpoints, credentials: Credentials, *, now: float
) -> Credentials:
    body = await _token_request(
        http, ends.oauth_token, "token refresh", json=refresh_body(credentials.refresh_token)
    )
    return credentials_from_tokens(body, now=now, previous=credentials)


async def revoke(http: httpx.AsyncClient, ends: Endpoints, credentials: Credentials) -> None:
    """Revoke the sign-in's refresh token, and with it the grant. Raises AuthError."""
    status, body = await _post(http, ends.oauth_revoke, json=revoke_body(credentials.refresh_token))
    if status != 200:
        raise AuthError(f"chatgpt sign-in: revocation refused: {token_error(status, body)}")


async def sign_in(
    ends: Endpoints,
    show: Callable[[DeviceCode], None],
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Credentials:
    """The whole device-code sign-in; `show` tells the person where to go."""
    async with client() as http:
        code = await request_device_code(http, ends)
        show(code)
        approved = await wait_for_approval(http, ends, code, sleep=sleep, clock=clock)
        return await exchange_code(http, ends, approved, now=time.time())
