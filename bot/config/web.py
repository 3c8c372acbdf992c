"""The run page's settings: where Neo is served, and the App's OAuth client for signing in.

`Settings` has these fields (NEO_PUBLIC_URL, NEO_GITHUB_CLIENT_ID,
NEO_GITHUB_CLIENT_SECRET, NEO_GITHUB_WEB_URL, NEO_SESSION_SECRET); docs/run-page.md
says what each is for.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MIN_SESSION_SECRET", "WebSettings", "public_url_problem"]

# A session secret shorter than this is guessable offline from one cookie.
MIN_SESSION_SECRET = 32


def public_url_problem(value: str) -> str | None:
    """Why `value` cannot be NEO_PUBLIC_URL, or None."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return "must be an http(s) URL such as https://neo.example.com"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http(s) URL such as https://neo.example.com"
    if parts.username is not None or parts.password is not None:
        return "must not hold a user or password"
    # Neo's routes are at the root: a path would be a prefix no route has.
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "must be the origin Neo is served at, with no path, e.g. https://neo.example.com"
    return None


class WebSettings(BaseSettings):
    """The run page's part of `Settings`."""

    model_config = SettingsConfigDict(env_prefix="NEO_", extra="ignore", frozen=True)

    # Where people reach `neo serve`: links to run pages, and the sign-in's
    # callback (<public url>/auth/github/callback). Empty: no links, no sign-in.
    public_url: str = ""
    # The App's OAuth client, written by `neo setup-app`: signing in to see
    # private repositories' runs.
    github_client_id: str = ""
    github_client_secret: SecretStr | None = None
    # GitHub's web host, where people sign in. Empty: the one NEO_GITHUB_API_URL
    # belongs to (https://github.com, or https://HOST of https://HOST/api/v3).
    github_web_url: str = ""
    # Signs and encrypts the session cookies. Unset: derived from the App's
    # secrets (its key, webhook secret and client secret), so it changes, and
    # everyone signs in again, when one of them does.
    session_secret: SecretStr | None = None

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return ""
        problem = public_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.rstrip("/")

    @field_validator("github_web_url")
    @classmethod
    def _web_url(cls, value: str) -> str:
        value = value.strip()
        if value and public_url_problem(value) is not None:
            raise ValueError("must be GitHub's web address, such as https://github.com")
        return value.rstrip("/")

    @field_validator("github_client_id")
    @classmethod
    def _client_id(cls, value: str) -> str:
        value = value.strip()
        # It goes into a URL and a form as it is.
        if value and not value.replace(".", "").replace("_", "").replace("-", "").isalnum():
            raise ValueError("expected the App's client id, such as Iv23liABCDEF12345678")
        return value

    @field_validator("session_secret")
    @classmethod
    def _session_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().strip()) < MIN_SESSION_SECRET:
            raise ValueError(
                f"must be at least {MIN_SESSION_SECRET} characters "
                "(e.g. `openssl rand -hex 32`), or unset to derive it from the App's secrets"
            )
        return value

    @model_validator(mode="after")
    def _client(self) -> WebSettings:
        secret = self.github_client_secret
        has_secret = secret is not None and bool(secret.get_secret_value().strip())
        if self.github_client_id and not has_secret:
            raise ValueError(
                "NEO_GITHUB_CLIENT_SECRET is not set, but NEO_GITHUB_CLIENT_ID is: "
                "set both (neo setup-app writes them) or neither"
            )
        if has_secret and not self.github_client_id:
            raise ValueError(
                "NEO_GITHUB_CLIENT_ID is not set, but NEO_GITHUB_CLIENT_SECRET is: "
                "set both (neo setup-app writes them) or neither"
            )
        return self

    @property
    def sign_in(self) -> bool:
        """Whether people can sign in: the OAuth client and where to call back are known."""
        return bool(self.public_url and self.github_client_id)
