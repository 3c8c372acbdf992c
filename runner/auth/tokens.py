"""A signed-in account's request headers, with its tokens kept fresh.

Refreshed a margin before they expire, and once more when the backend still
says 401; the refreshed tokens are stored at once, since OpenAI's refresh
tokens are single-use. A refresh holds the sign-in lock (`lock.py`) and reads
the stored file again under it: another Neo process may have refreshed
already, and its tokens are the live ones. They are taken only when they are
the same account's: a file signed in to another account since (or signed out)
ends the run in one line rather than carrying it on, billed to someone else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from runner.auth import oauth
from runner.auth.credentials import Credentials, needs_refresh
from runner.auth.endpoints import Endpoints
from runner.auth.errors import LOGIN_HINT, AuthError
from runner.auth.lock import sign_in_lock
from runner.auth.storage import credentials_path, load_credentials, save_credentials

__all__ = ["ChatGPTTokens"]


class ChatGPTTokens:
    """Headers for the ChatGPT backend, from `$NEO_HOME/auth/chatgpt.json`."""

    def __init__(
        self,
        home: Path,
        ends: Endpoints,
        *,
        credentials: Credentials | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._home = home
        self._ends = ends
        self._clock = clock
        # Raises NotSignedIn at construction, before a run starts.
        self._credentials = credentials or load_credentials(home)
        self._lock = asyncio.Lock()

    @property
    def account_id(self) -> str:
        return self._credentials.account_id

    async def headers(self, *, renew: bool = False) -> dict[str, str]:
        """`renew`: the last token was refused, so get another."""
        async with self._lock:
            if renew or needs_refresh(self._credentials, self._clock()):
                await self._refresh(refused=self._credentials.access_token if renew else None)
            credentials = self._credentials
        return {
            "Authorization": f"Bearer {credentials.access_token}",
            "chatgpt-account-id": credentials.account_id,
        }

    async def _refresh(self, *, refused: str | None) -> None:
        async with sign_in_lock(self._home):
            stored = load_credentials(self._home)
            if stored.account_id != self._credentials.account_id:
                raise AuthError(
                    f"chatgpt sign-in: {credentials_path(self._home)} is now signed in to"
                    f" another account ({stored.account_id}, not {self.account_id}); start"
                    " the run again to use it"
                )
            if stored.access_token != self._credentials.access_token and (
                stored.access_token != refused and not needs_refresh(stored, self._clock())
            ):
                self._credentials = stored
                return
            async with oauth.client() as http:
                fresh = await oauth.refresh(http, self._ends, stored, now=self._clock())
            self._credentials = fresh
            try:
                save_credentials(self._home, fresh)
            except OSError as error:
                # The old refresh token is spent: this process carries on with the
                # new ones, but the next one will have to sign in again.
                raise AuthError(
                    f"chatgpt sign-in: cannot store the refreshed tokens ({error.strerror}); "
                    f"{LOGIN_HINT} once it can be written"
                ) from None
