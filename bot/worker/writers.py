"""Who may stop or steer a run from its page: the people `@neo` works for on the repository.

The run page (bot/runs) asks this for a signed-in viewer: their role on the
repository, as the App reads it (the collaborator permission endpoint, as for
a comment), in the `allowed_users` of the repository's config (its own file,
else its owner's `.github`, as a job reads it; defaults when it is invalid).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.github.app import CONFIG_PERMISSIONS, AppAuth
from bot.github.client import RepoClient
from bot.worker.access import user_authorised
from bot.worker.config import ConfigResolver

__all__ = ["ConfiguredWriters"]


@dataclass(frozen=True, slots=True)
class ConfiguredWriters:
    """bot.runs.access.Writers with the worker's rule and config."""

    app: AppAuth
    config: ConfigResolver

    async def may_act(self, installation_id: int, repository: str, login: str) -> bool:
        if login.lower().endswith("[bot]"):
            return False  # people sign in; a bot's login never does
        github = await RepoClient.for_installation(
            self.app, installation_id, repository, 0, permissions=CONFIG_PERMISSIONS
        )
        (config, _), level = await asyncio.gather(
            self.config.resolve_repository(github, installation_id), github.permission(login)
        )
        rules = config or self.config.source.fallback()
        return user_authorised(level, rules.allowed_users)
