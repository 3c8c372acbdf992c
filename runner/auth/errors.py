"""What a ChatGPT sign-in fails with: one line each, never a token."""

from __future__ import annotations

from runner.errors import ConfigError, NeoError

__all__ = ["AuthError", "CredentialsFileError", "NotSignedIn"]

LOGIN_HINT = "run `neo login chatgpt`"


class AuthError(NeoError):
    """OpenAI's sign-in service refused or failed: the login, or a refresh mid-run."""

    kind = "provider_http_error"


class NotSignedIn(ConfigError):
    def __init__(self) -> None:
        super().__init__(f"not signed in to ChatGPT ({LOGIN_HINT})")


class CredentialsFileError(ConfigError):
    """The stored credentials cannot be trusted or read."""
