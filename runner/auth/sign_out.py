"""Signing out: the stored credentials deleted, then their grant revoked.

Deleting the file alone leaves the refresh token valid wherever a copy of it
went (a backup, a disk image); revoking it at OpenAI ends the grant. The file
goes first, under the sign-in lock, so that a revocation that cannot be made
(offline, the service down) still signs this machine out; it is then only
said, since the tokens lapse on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.auth import oauth
from runner.auth.credentials import Credentials
from runner.auth.endpoints import Endpoints
from runner.auth.errors import AuthError, CredentialsFileError, NotSignedIn
from runner.auth.lock import sign_in_lock
from runner.auth.storage import delete_credentials, load_credentials

__all__ = ["SignedOut", "sign_out"]


@dataclass(frozen=True, slots=True)
class SignedOut:
    """What a sign-out did: `deleted`, whether there was a file; `revoked`, whether
    OpenAI revoked its grant; `problem`, why not, when there was one to revoke."""

    deleted: bool
    revoked: bool = False
    problem: str = ""


async def sign_out(home: Path, ends: Endpoints) -> SignedOut:
    """Delete the stored sign-in and revoke it (best effort). Raises OSError when
    the file cannot be deleted, AuthError when the lock cannot be had."""
    credentials: Credentials | None = None
    problem = ""
    async with sign_in_lock(home):
        try:
            credentials = load_credentials(home)
        except NotSignedIn:
            pass
        except CredentialsFileError:
            # Not ours to read: it goes all the same, with nothing to revoke.
            problem = "its file could not be read"
        deleted = delete_credentials(home)
    if credentials is None:
        return SignedOut(deleted, problem=problem if deleted else "")
    try:
        async with oauth.client(oauth.REVOKE_TIMEOUT) as http:
            await oauth.revoke(http, ends, credentials)
    except AuthError as error:
        return SignedOut(deleted, problem=str(error))
    return SignedOut(deleted, revoked=True)
