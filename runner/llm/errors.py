"""Errors a provider raises once it has given up."""

from __future__ import annotations

from typing import ClassVar

import httpx2

from runner.errors import NeoError
from runner.text import one_line


class ProviderError(NeoError):
    kind: ClassVar[str] = "provider_http_error"


class ProviderHTTPError(ProviderError):
    """The provider answered with an error status.

    `str()` is the one line a user sees, for example
    ``anthropic 401 authentication_error: invalid x-api-key (check ANTHROPIC_API_KEY)``.
    The raw body is kept for debug logs only and never printed.
    """

    kind = "provider_http_error"

    def __init__(
        self,
        provider: str,
        status: int,
        error_type: str,
        message: str,
        *,
        hint: str = "",
        raw_body: str = "",
    ) -> None:
        # An error event inside an already-started stream arrives under 200.
        where = f"{status}" if status >= 400 else "stream"
        line = f"{provider} {where} {error_type}: {message}".rstrip(": ")
        if hint:
            line = f"{line} ({hint})"
        super().__init__(line)
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.raw_body = raw_body


# What the last line of an overloaded provider suggests.
OVERLOADED_HINT = "overloaded: try again later, or add a --fallback provider"


def overloaded_hint(status: int, error_type: str, message: str) -> str:
    """OVERLOADED_HINT for Anthropic's 529 and any error that says it is overloaded."""
    said = f"{error_type} {message}".lower()
    if status == 529 or "overloaded" in said or (status == 503 and "overload" in said):
        return OVERLOADED_HINT
    return ""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached, or the response stream broke."""

    kind = "provider_connection_error"


class ContextOverflow(ProviderHTTPError):
    """The provider refused the prompt as longer than the model's context window.

    A compactor can make it fit; without one the run ends with this kind.
    """

    kind = "context_window_exceeded"


def body_excerpt(response: httpx2.Response) -> str:
    """A short, single-line piece of an error body that is not the API's JSON shape."""
    try:
        text = response.text
    except httpx2.ResponseNotRead:
        return "no error message"
    return one_line(text, 201) or "no error message"
