"""ChatGPT sign-in credentials, and what their tokens say (pure).

The tokens are JWTs; their claims are read, not verified: the servers that
issued them check them on every use, Neo only needs the account id and the
expiry.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.auth.errors import AuthError

__all__ = [
    "REFRESH_MARGIN",
    "Credentials",
    "account_id_of",
    "credentials_from_tokens",
    "jwt_claims",
    "needs_refresh",
]

# Refresh this long before the access token expires, so a request never
# leaves with a token that lapses on the way.
REFRESH_MARGIN = 5 * 60.0
# Where OpenAI's tokens keep their ChatGPT claims.
_AUTH_CLAIM = "https://api.openai.com/auth"


@dataclass(frozen=True, slots=True)
class Credentials:
    """A signed-in ChatGPT account. The tokens stay out of `repr`."""

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    id_token: str = field(repr=False)
    account_id: str
    # Seconds since the epoch; None: unknown, so only a 401 triggers a refresh.
    expires_at: float | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.access_token, self.refresh_token, self.id_token)


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified. Raises AuthError when it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        raise AuthError("chatgpt sign-in: a token is not a JWT")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise AuthError("chatgpt sign-in: a token's claims are not readable") from None
    if not isinstance(claims, dict):
        raise AuthError("chatgpt sign-in: a token's claims are not an object")
    return claims


def account_id_of(id_token: str) -> str:
    """The ChatGPT account id the backend wants in `chatgpt-account-id`."""
    auth = jwt_claims(id_token).get(_AUTH_CLAIM)
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    if not isinstance(account, str) or not account:
        raise AuthError("chatgpt sign-in: the id token names no ChatGPT account")
    return account


def _expiry(access_token: str, expires_in: object, now: float) -> float | None:
    try:
        exp = jwt_claims(access_token).get("exp")
    except AuthError:
        exp = None  # an opaque access token: its lifetime comes from the response
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        return float(exp)
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        return now + float(expires_in)
    return None


def credentials_from_tokens(
    body: Mapping[str, Any], *, now: float, previous: Credentials | None = None
) -> Credentials:
    """Credentials from a token endpoint's answer.

    A refresh may leave out the id or refresh token; those of `previous` stay.
    """

    def text(name: str) -> str | None:
        value = body.get(name)
        return value if isinstance(value, str) and value else None

    access = text("access_token")
    refresh = text("refresh_token") or (previous.refresh_token if previous else None)
    id_token = text("id_token") or (previous.id_token if previous else None)
    if access is None or refresh is None or id_token is None:
        raise AuthError("chatgpt sign-in: the token endpoint's answer lacks a token")
    return Credentials(
        access_token=access,
        refresh_token=refresh,
        id_token=id_token,
        account_id=account_id_of(id_token),
        expires_at=_expiry(access, body.get("expires_in"), now),
    )


def needs_refresh(credentials: Credentials, now: float, margin: float = REFRESH_MARGIN) -> bool:
    return credentials.expires_at is not None and credentials.expires_at - now <= margin
