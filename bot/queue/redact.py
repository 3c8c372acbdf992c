"""Keeping a database URL's password out of a message. Pure.

libpq quotes a URL it cannot parse, password and all, and a message may
come from anywhere below Neo: so the URL's secrets are taken out of the
text itself, whatever it says, rather than trusting each message's shape.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["redacted"]

HIDDEN = "***"
# What follows `scheme://`, up to the path, query or fragment.
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def url_secrets(url: str) -> list[str]:
    """The password of `url` (after `user:`, or a `password=` parameter), as
    written and percent-decoded; found even when the URL does not parse."""
    found: list[str] = []
    authority = _AUTHORITY.match(url)
    if authority is not None and "@" in authority.group(1):
        userinfo = authority.group(1).rpartition("@")[0]
        _, colon, password = userinfo.partition(":")
        if colon:
            found.append(password)
    _, _, query = url.partition("?")
    for pair in query.partition("#")[0].split("&"):
        key, _, value = pair.partition("=")
        if unquote(key) == "password":
            found.append(value)
    secrets = {text for value in found for text in (value, unquote(value)) if text}
    # Longest first: a password that holds another is replaced whole.
    return sorted(secrets, key=len, reverse=True)


def redacted(text: str, url: str) -> str:
    """`text` with each of `url`'s secrets replaced by `***`."""
    for secret in url_secrets(url):
        text = text.replace(secret, HIDDEN)
    return text
