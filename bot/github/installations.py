"""The App's installations and the repositories each one can see, as the scheduler reads them.

As the App (its JWT): `GET /app/installations`. As each installation, with a
token for all of its repositories that may read contents and metadata, nothing
more: `GET /installation/repositories`, and files through a read-only
`RepoClient`. Lists follow `Link: rel="next"`, each page retried under
`bot.github.core`'s policy (`bot.github.caller`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from githubkit_schemas.latest.models import Installation, InstallationRepositoriesGetResponse200

from bot.github.caller import DEFAULT_RETRY, Caller, Clock, Sleep
from bot.github.client import RepoClient
from bot.github.models import InstalledRepository
from bot.github.repo_base import PAGE
from bot.github.signing import InstallationKeyStrategy

if TYPE_CHECKING:
    from githubkit import GitHub

    from bot.github.app import GitHubApp
    from bot.github.core import RetryPolicy

__all__ = ["Installations"]


class Installations:
    """What the App is installed on: installations, their repositories, and readers of those.

    `bot_login` is the App's bot user, which the readers' RepoClients are by.
    `retry`, `sleep` and `now` are the retry policy and its clocks (tests replace them).
    """

    def __init__(
        self,
        app: GitHubApp,
        *,
        bot_login: str,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Sleep = asyncio.sleep,
        now: Clock = time.time,
    ) -> None:
        self._app = app
        self._bot_login = bot_login
        self._retry = retry
        self._sleep = sleep
        self._now = now
        self._callers: dict[int, Caller] = {}  # one per installation, with its read token

    def _caller_for(self, client: GitHub[Any]) -> Caller:
        return Caller(client, retry=self._retry, sleep=self._sleep, now=self._now)

    async def active(self) -> list[int]:
        """The ids of the App's installations, bar suspended ones (they can mint no token)."""
        caller = self._caller_for(self._app.app_client)
        first = functools.partial(caller.github.rest.apps.async_list_installations, per_page=PAGE)
        ids: list[int] = []
        async for response in caller.each_page("/app/installations", first, list[Installation]):
            ids.extend(
                installation.id
                for installation in response.parsed_data
                if installation.suspended_at is None
            )
        return ids

    async def repositories(self, installation_id: int) -> list[InstalledRepository]:
        """The repositories `installation_id` can see, bar archived and disabled ones.

        Neo cannot push to those.
        """
        caller = self._installation(installation_id)
        first = functools.partial(
            caller.github.rest.apps.async_list_repos_accessible_to_installation, per_page=PAGE
        )
        found: list[InstalledRepository] = []
        pages = caller.each_page(
            "/installation/repositories", first, InstallationRepositoriesGetResponse200
        )
        async for response in pages:
            found.extend(
                InstalledRepository(repo.full_name, repo.default_branch)
                for repo in response.parsed_data.repositories
                if not repo.archived and not repo.disabled
            )
        return found

    def reader(self, installation_id: int, repository: str) -> RepoClient:
        """A RepoClient on `repository` ("owner/name") with the installation's read token."""
        caller = self._installation(installation_id)
        return RepoClient(
            caller.github,
            repository,
            0,
            bot_login=self._bot_login,
            retry=self._retry,
            sleep=self._sleep,
            now=self._now,
        )

    def forget(self, keep: Collection[int]) -> None:
        """Drop what is held for installations not in `keep` (uninstalled ones)."""
        for installation_id in [i for i in self._callers if i not in keep]:
            del self._callers[installation_id]

    def _installation(self, installation_id: int) -> Caller:
        caller = self._callers.get(installation_id)
        if caller is None:
            app = self._app.app_client
            # githubkit mints and caches this token in the App's own cache; the
            # App's per-repository job tokens cannot list an installation.
            auth = InstallationKeyStrategy(
                app_id=app.auth.app_id,
                private_key=app.auth.private_key,
                installation_id=installation_id,
                permissions={"contents": "read", "metadata": "read"},  # CONFIG_PERMISSIONS
            )
            caller = self._caller_for(app.with_auth(auth))
            self._callers[installation_id] = caller
        return caller
