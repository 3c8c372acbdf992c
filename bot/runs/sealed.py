"""Cookies only this server can read or make: JSON sealed with Fernet, per purpose.

Fernet (the `cryptography` package's authenticated encryption: AES-CBC and an
HMAC, with the time it was made) both signs and encrypts, so a session cookie
can carry the user's token without the browser, or anyone holding the
cookie's text, reading it, and a cookie older than its purpose allows is
refused. Each purpose has its own key, derived from the one secret with HKDF,
so a cookie made for one (the sign-in's state) is never taken for another
(a session). Pure: no clock but the one given.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["Sealer", "derived_secret"]

_INFO: Final = b"neo run page v1: "
# A cookie's value is at most 4 KB; a sealed one this big was never made here.
MAX_SEALED: Final = 4000


def derived_secret(*secrets: bytes) -> bytes:
    """A session secret from the App's own secrets (its key, webhook and client secrets).

    It changes when any of them does, which ends every session: people sign in again.
    """
    material = b"\0".join(hashlib.sha256(part).digest() for part in secrets)
    return hashlib.sha256(b"neo session secret\0" + material).digest()


class Sealer:
    """Seals and opens JSON objects for one of a few purposes ("session", "state")."""

    def __init__(self, secret: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._clock = clock
        self._keys: dict[str, Fernet] = {}

    def __repr__(self) -> str:
        return "Sealer(...)"

    def seal(self, purpose: str, payload: Mapping[str, Any]) -> str:
        data = json.dumps(dict(payload), separators=(",", ":")).encode()
        return self._key(purpose).encrypt_at_time(data, int(self._clock())).decode("ascii")

    def open(self, purpose: str, sealed: str | None, *, max_age: float) -> dict[str, Any] | None:
        """The object `seal(purpose, ...)` made at most `max_age` seconds ago, else None."""
        if not sealed or len(sealed) > MAX_SEALED:
            return None
        try:
            data = self._key(purpose).decrypt_at_time(
                sealed.encode("ascii"), ttl=int(max_age), current_time=int(self._clock())
            )
            value = json.loads(data)
        except (InvalidToken, UnicodeEncodeError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def mac(self, purpose: str, text: str) -> str:
        """An HMAC of `text` for `purpose`: a CSRF token for a session's id."""
        key = self._derive(b"mac " + purpose.encode())
        return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()

    def _key(self, purpose: str) -> Fernet:
        key = self._keys.get(purpose)
        if key is None:
            key = Fernet(base64.urlsafe_b64encode(self._derive(purpose.encode())))
            self._keys[purpose] = key
        return key

    def _derive(self, info: bytes) -> bytes:
        hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO + info)
        return hkdf.derive(self._secret)
