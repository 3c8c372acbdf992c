"""The one error a GitHub call ends in, whichever module made it."""

from __future__ import annotations

from runner.errors import NeoError

__all__ = ["GitHubAuthError", "GitHubError"]


class GitHubError(NeoError):
    """A GitHub call failed for good: one line, with the status GitHub answered (if any)."""

    kind = "github_error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubAuthError(GitHubError):
    """Authenticating failed: the App's JWT, an installation token, or a workflow's token.

    A subclass only so start-up can turn it into a ConfigError (bad credentials)
    while a job's own calls fail as any GitHubError.
    """
