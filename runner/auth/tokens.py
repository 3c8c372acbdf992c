"""A signed-in account's request headers, with its tokens kept fresh.

Refreshed a margin before they expire, and once more when the backend still
says 401; the refreshed tokens are stored at once, since OpenAI's refresh
tokens are single-use. Before refreshing, the stored file is read again: another
Neo process may have refreshed already, and its tokens are the live ones.
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
from runner.auth.storage import load_credentials, save_credentials

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
        stored = load_credentials(self._home)
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
