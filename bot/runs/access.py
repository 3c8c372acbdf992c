"""Who may see a repository's runs, and who may stop or steer them.

A public repository's runs are for anyone to read. A private one's are for
signed-in people GitHub shows the repository to, asked with their own token.
Writing (Stop, Steer) is `@neo`'s rule, the worker's: a role the repository's
`allowed_users` lists (`Writers`, which `neo serve` gives from bot/worker).
Every answer is kept `ACCESS_TTL` seconds, in caches of bounded size: a page
and its event stream ask often, GitHub is asked about once a minute.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

from bot.github.errors import GitHubError
from bot.github.oauth import GitHubUsers, UserToken
from bot.github.visibility import Visibility
from bot.runs.ttl_cache import TtlCache

__all__ = [
    "ACCESS_TTL",
    "Access",
    "Gate",
    "SignInExpired",
    "Viewer",
    "Writers",
    "access_to",
]

ACCESS_TTL: Final = 60.0
# Entries per cache: a busy server's viewers and repositories, each a few hundred bytes.
CACHE_SIZE: Final = 4096


@dataclass(frozen=True, slots=True)
class Access:
    read: bool
    write: bool


NO_ACCESS: Final = Access(read=False, write=False)


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking at a page: a signed-in GitHub login, or None (anonymous).

    The token and the gate are what `access_to` asks GitHub with; neither is
    compared, printed, or ever put in a page.
    """

    login: str | None
    token: UserToken | None = field(default=None, repr=False, compare=False)
    gate: Gate | None = field(default=None, repr=False, compare=False)


class SignInExpired(Exception):
    """GitHub refused the viewer's token (it expired or was revoked): sign in again."""


class Writers(Protocol):
    """Whether `login` may act on `repository`'s runs: the rule `@neo` has for them."""

    async def may_act(self, installation_id: int, repository: str, login: str) -> bool: ...


Visibilities = Callable[[str, int | None], Awaitable[Visibility | None]]


class Gate:
    """Access decisions for one server: GitHub's answers, cached briefly.

    `visibility` asks as the App (bot.github.visibility); `users` asks as the
    viewer, None when sign-in is not set up.
    """

    def __init__(
        self,
        visibility: Visibilities,
        writers: Writers,
        users: GitHubUsers | None,
        *,
        ttl: float = ACCESS_TTL,
        size: int = CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._visibility = visibility
        self._writers = writers
        self._users = users
        # In a tuple: a repository the App is not in (None) is remembered too.
        self.visibilities: TtlCache[str, tuple[Visibility | None]] = TtlCache(ttl, size, clock)
        self.accesses: TtlCache[tuple[str, str], Access] = TtlCache(ttl, size, clock)
        self._asking: dict[object, asyncio.Future[object]] = {}

    def __repr__(self) -> str:
        return "Gate(...)"

    async def access(
        self, viewer: Viewer, repository: str, installation_id: int | None = None
    ) -> Access:
        """What `viewer` may do with `repository`'s runs ("owner/name").

        Raises SignInExpired when GitHub refuses the viewer's token, GitHubError
        when it does not answer.
        """
        seen = await self._seen(repository, installation_id)
        if seen is None:
            return NO_ACCESS  # the App is not there: it has no runs to show
        if viewer.login is None or viewer.token is None:
            return Access(read=not seen.private, write=False)
        key = (viewer.login.lower(), repository.lower())
        cached = self.accesses.get(key)
        if cached is not None:
            return cached
        access = await self._once(key, lambda: self._ask(viewer, repository, seen))
        assert isinstance(access, Access)
        self.accesses.put(key, access)
        return access

    async def _seen(self, repository: str, installation_id: int | None) -> Visibility | None:
        key = repository.lower()
        cached = self.visibilities.get(key)
        if cached is not None:
            return cached[0]
        seen = await self._once(key, lambda: self._visibility(repository, installation_id))
        assert seen is None or isinstance(seen, Visibility)
        self.visibilities.put(key, (seen,))
        return seen

    async def _ask(self, viewer: Viewer, repository: str, seen: Visibility) -> Access:
        assert viewer.login is not None
        assert viewer.token is not None
        if seen.private:
            if self._users is None:
                return NO_ACCESS
            try:
                role = await self._users.role(viewer.token, repository)
            except GitHubError as error:
                if error.status == 401:
                    raise SignInExpired from None
                raise
            if role is None or role == "none":
                return NO_ACCESS
        write = await self._writers.may_act(seen.installation_id, repository, viewer.login)
        return Access(read=True, write=write)

    async def _once(self, key: object, ask: Callable[[], Awaitable[object]]) -> object:
        """One question to GitHub per key at a time: a page's many requests share it.

        The question is a task of its own: a visitor who leaves (their request
        cancelled) does not cancel it for the others waiting on it."""
        task = self._asking.get(key)
        if task is None:
            task = asyncio.ensure_future(ask())
            self._asking[key] = task
            task.add_done_callback(lambda done: self._asked(key, done))
        return await asyncio.shield(task)

    def _asked(self, key: object, task: asyncio.Future[object]) -> None:
        if self._asking.get(key) is task:
            del self._asking[key]
        if not task.cancelled():
            task.exception()  # retrieved: every waiter may have left


async def access_to(
    viewer: Viewer, repository: str, *, installation_id: int | None = None
) -> Access:
    """What `viewer` (from `viewer_of`) may do with `repository`'s runs.

    A viewer made without a gate (a test's) may read nothing. Pass the job's
    `installation_id` when known: it saves GitHub a question.
    """
    if viewer.gate is None:
        return NO_ACCESS
    return await viewer.gate.access(viewer, repository, installation_id)
