"""The device-code sign-in's messages and decisions (pure).

The flow, as OpenAI's Codex CLI runs it: ask for a user code, show it with
the verification page, poll until the person has approved it, then trade the
authorization code the poll returns (with the PKCE verifier it carries) for
tokens at the OAuth token endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from runner.auth.errors import LOGIN_HINT, AuthError

__all__ = [
    "CLIENT_ID",
    "DEFAULT_INTERVAL",
    "LOGIN_TIMEOUT",
    "SLOW_DOWN_STEP",
    "Approved",
    "DeviceCode",
    "Pending",
    "PollOutcome",
    "SlowDown",
    "exchange_form",
    "parse_device_code",
    "poll_outcome",
    "refresh_body",
    "revoke_body",
    "token_error",
]

# The public OAuth client of OpenAI's Codex CLI, whose sign-in this is.
CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
DEFAULT_INTERVAL = 5.0
# RFC 8628: after `slow_down`, wait this much longer between polls.
SLOW_DOWN_STEP = 5.0
# A user code lives fifteen minutes.
LOGIN_TIMEOUT = 15 * 60.0


@dataclass(frozen=True, slots=True)
class DeviceCode:
    """What the person is shown, and what the poll sends back."""

    verification_url: str
    user_code: str
    device_auth_id: str
    interval: float


@dataclass(frozen=True, slots=True)
class Pending:
    """Not approved yet: poll again after the interval."""


@dataclass(frozen=True, slots=True)
class SlowDown:
    """Polling too often: poll again, less often."""


@dataclass(frozen=True, slots=True)
class Approved:
    authorization_code: str
    code_verifier: str


PollOutcome: TypeAlias = Pending | SlowDown | Approved


def parse_device_code(body: object, verification_url: str) -> DeviceCode:
    """The user-code endpoint's answer. Its interval is a string on the wire."""
    if not isinstance(body, Mapping):
        raise AuthError("chatgpt sign-in: the device code answer is not a JSON object")
    device_auth_id = body.get("device_auth_id")
    user_code = body.get("user_code", body.get("usercode"))
    if not isinstance(device_auth_id, str) or not isinstance(user_code, str) or not user_code:
        raise AuthError("chatgpt sign-in: the device code answer lacks its code")
    try:
        interval = float(body.get("interval", DEFAULT_INTERVAL))
    except (TypeError, ValueError):
        interval = DEFAULT_INTERVAL
    return DeviceCode(verification_url, user_code, device_auth_id, max(0.0, interval))


def _error_code(body: object) -> str:
    if not isinstance(body, Mapping):
        return ""
    error = body.get("error")
    if isinstance(error, Mapping):
        error = error.get("code") or error.get("type")
    return error if isinstance(error, str) else ""


def poll_outcome(status: int, body: object) -> PollOutcome:
    """What one poll's answer means. Raises AuthError when the sign-in is over."""
    code = _error_code(body)
    if status == 200 and isinstance(body, Mapping):
        authorization_code = body.get("authorization_code")
        verifier = body.get("code_verifier")
        if isinstance(authorization_code, str) and isinstance(verifier, str):
            return Approved(authorization_code, verifier)
        raise AuthError("chatgpt sign-in: the approval lacks its authorization code")
    if code == "slow_down" or status == 429:
        return SlowDown()
    if "expired" in code or status == 410:
        raise AuthError(f"chatgpt sign-in: the code expired before it was approved ({LOGIN_HINT})")
    if "denied" in code:
        raise AuthError("chatgpt sign-in: the request was denied")
    # The service answers 403 or 404 until the person approves the code.
    if status in (403, 404) or "pending" in code:
        return Pending()
    raise AuthError(
        f"chatgpt sign-in: polling failed with HTTP {status}{f' {code}' if code else ''}"
    )


def exchange_form(approved: Approved, redirect_uri: str) -> dict[str, str]:
    """The authorization-code grant, form-encoded by the caller."""
    return {
        "grant_type": "authorization_code",
        "code": approved.authorization_code,
        "redirect_uri": redirect_uri,
        "client_id": CLIENT_ID,
        "code_verifier": approved.code_verifier,
    }


def refresh_body(refresh_token: str) -> dict[str, str]:
    """The refresh grant, sent as JSON."""
    return {
        "client_id": CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "scope": "openid profile email",
    }


def revoke_body(refresh_token: str) -> dict[str, str]:
    """RFC 7009's revocation of a refresh token, sent as JSON as Codex sends it."""
    return {"token": refresh_token, "token_type_hint": "refresh_token", "client_id": CLIENT_ID}


def token_error(status: int, body: Any) -> str:
    """One line for a refused token request, without the request's secrets."""
    code = _error_code(body)
    detail = body.get("error_description") if isinstance(body, Mapping) else None
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        detail = body["error"].get("message")
    text = " ".join(str(detail).split())[:200] if isinstance(detail, str) else ""
    return f"{status} {code or 'http_error'}{f': {text}' if text else ''}"
