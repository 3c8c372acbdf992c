"""Whether a repository is private, and which installation of the App it is in, asked as the App.

What the run page needs before it shows a run to anyone: a public
repository's runs are for all to read, a private one's for those GitHub says
can read it (`bot.github.oauth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot.github.app import GitHubApp
from bot.github.errors import GitHubError
from bot.github.oauth import answered

__all__ = ["METADATA", "Visibility", "visibility"]

# What the question needs of an installation token: every installation has it.
METADATA: Final = {"metadata": "read"}


@dataclass(frozen=True, slots=True)
class Visibility:
    installation_id: int
    private: bool


async def visibility(
    app: GitHubApp, repository: str, installation_id: int | None = None
) -> Visibility | None:
    """`repository`'s ("owner/name") visibility; None when the App is not installed
    there or it is gone. `installation_id`, when the caller knows it (a job's),
    saves asking GitHub for it."""
    owner, _, name = repository.partition("/")
    try:
        if installation_id is None:
            async with answered("GET", "/repos/{owner}/{repo}/installation"):
                response = await app.app_client.rest.apps.async_get_repo_installation(owner, name)
            installation_id = response.parsed_data.id
        github = await app.installation_client(installation_id, repository, METADATA)
        async with answered("GET", "/repos/{owner}/{repo}"):
            repo = (await github.rest.repos.async_get(owner, name)).parsed_data
    except GitHubError as error:
        # 404: not installed there, or no such repository; 422: the installation
        # cannot have a token for it (it was taken out of the installation).
        if error.status in (404, 422):
            return None
        raise
    return Visibility(installation_id, bool(repo.private))
