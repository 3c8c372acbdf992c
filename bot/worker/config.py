"""A job's config: the repository's file, else the owner's `.github`, with overrides on top.

The owner's daily budgets bind every repository, also one with a file of its own.

`ConfigSource` says where to look and what wins (`neo action`'s inputs);
`overridden` applies it, pure; `ConfigResolver` reads the files from the
default branch and remembers, for `OWNER_CONFIG_TTL`, owners it cannot read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from bot.config import CONFIG_PATH, RepoConfig, RepoConfigError, parse_repo_config
from bot.github.app import CONFIG_PERMISSIONS, AppAuth, GitHubAuthError
from bot.github.client import GitHubError, RepoClient
from bot.jobs import JobRequest
from runner.errors import ConfigError
from runner.mcp import Operator
from runner.text import one_line

__all__ = ["OWNER_CONFIG_TTL", "ConfigResolver", "ConfigSource", "overridden"]

# How long an owner's `.github` repository the App cannot read is not asked
# about again: without the cache every job pays a token request GitHub refuses.
OWNER_CONFIG_TTL = 300.0

# Where an owner keeps settings for all its repositories (as Probot apps do).
_OWNER_CONFIG_REPO = ".github"
# What GitHub answers for a repository the installation cannot see or read.
_NOT_THERE = frozenset({403, 404, 422})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSource:
    """The settings file to read, and the overrides that win over it.

    `overrides` (fields of `RepoConfig`, e.g. `neo action`'s inputs, named by
    `overrides_source` in messages) are checked by the model when made, and
    again merged with each file. ConfigError names the first bad one.
    """

    path: str = CONFIG_PATH
    overrides: Mapping[str, Any] = field(default_factory=dict)
    overrides_source: str = "the worker's settings"

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", self.path.strip("/") or CONFIG_PATH)
        object.__setattr__(self, "overrides", _valid_overrides(self.overrides))

    def fallback(self) -> RepoConfig:
        """What an invalid file still gets, to answer it: the defaults, under any overrides."""
        return RepoConfig.model_construct(**self.overrides)

    def allowed_users_source(self) -> str:
        """Where the `allowed_users` a job was checked against is set, for the reply."""
        if "allowed_users" in self.overrides:
            return self.overrides_source
        return f"`{self.path}`"


def overridden(config: RepoConfig, source: ConfigSource, where: str) -> RepoConfig:
    """`config` (read from `where`) with the overrides applied, checked together.

    Together, because a field may meet another: a branch prefix, schedules.
    """
    if not source.overrides:
        return config
    try:
        # Only what the file set, so the result still tells a default from a choice.
        chosen = {name: getattr(config, name) for name in config.model_fields_set}
        return RepoConfig.model_validate({**chosen, **source.overrides})
    except ValidationError as error:
        name, message = _first_problem(error)
        raise ConfigError(
            f"{name}: {message}, with {source.overrides_source} applied to {where}"
        ) from None


@dataclass
class ConfigResolver:
    """Reads a job's config; one per worker, for its cache of unreadable owners."""

    app: AppAuth
    source: ConfigSource
    clock: Callable[[], float]
    client_options: Mapping[str, Any] = field(default_factory=dict)
    # What the operator allows MCP servers: a file asking more is invalid.
    operator: Operator | None = None
    # Owners whose `.github` repository the App cannot read: until when.
    _unreadable: dict[tuple[int, str], float] = field(default_factory=dict)

    async def resolve(
        self, github: RepoClient, request: JobRequest
    ) -> tuple[RepoConfig | None, RepoConfigError | None]:
        """The repository's config; without one, the owner's; without either, defaults.

        From the default branch (no ref: GitHub's default), so a pull request
        cannot change it. The repository's file wins whole, bar the owner's
        daily budgets: those bind it, and it can only lower them.
        """
        assert request.installation_id is not None
        return await self.resolve_repository(github, request.installation_id)

    async def resolve_repository(
        self, github: RepoClient, installation_id: int
    ) -> tuple[RepoConfig | None, RepoConfigError | None]:
        """`resolve` for `github`'s repository, in the installation `installation_id`."""
        path = self.source.path
        text = await github.read_file(path)
        owner = await self._owner_file(installation_id, github.repository)
        own = text is not None
        if text is None:
            if owner is None:
                return overridden(RepoConfig(), self.source, path), None
            text, where = owner
        else:
            where = path
        try:
            config = overridden(
                parse_repo_config(text, source=where, operator=self.operator), self.source, where
            )
            if owner is not None:
                # An owner's file that cannot be read binds nothing, so it stops the
                # job like the repository's own would: the budget is not guessed.
                bound = parse_repo_config(owner[0], source=owner[1]) if own else config
                budgets = config.budgets.bound_by(bound.budgets, owner[1])
                config = config.model_copy(update={"budgets": budgets})
        except RepoConfigError as error:
            return None, error
        return config, None

    async def _owner_file(self, installation_id: int, repository: str) -> tuple[str, str] | None:
        """The config file of the owner's `.github` repository, and how to name it;
        None when there is none or the App cannot read it (remembered a while)."""
        owner, _, name = repository.partition("/")
        if name.lower() == _OWNER_CONFIG_REPO:
            return None
        key = (installation_id, owner.lower())
        until = self._unreadable.get(key)
        if until is not None and self.clock() < until:
            return None
        repository = f"{owner}/{_OWNER_CONFIG_REPO}"
        try:
            text = await self._owner_config(installation_id, repository)
        except (GitHubAuthError, GitHubError) as error:
            if error.status in _NOT_THERE:
                self._unreadable[key] = self.clock() + OWNER_CONFIG_TTL
                return None
            raise
        self._unreadable.pop(key, None)
        if text is None:
            return None
        return text, f"{repository}:{self.source.path}"

    async def _owner_config(self, installation_id: int, repository: str) -> str | None:
        """The file in `repository`, read with a read-only token for it alone.

        The job's token is scoped to its own repository; GitHub grants this one
        only when the App is installed on the owner's `.github` too.
        """
        client = await self.app.installation_client(installation_id, repository, CONFIG_PERMISSIONS)
        reader = RepoClient(
            client, repository, 0, bot_login=await self.app.bot_login(), **self.client_options
        )
        return await reader.read_file(self.source.path)


def _valid_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides as `RepoConfig` reads them; ConfigError names the first bad one."""
    try:
        valid = RepoConfig.model_validate(dict(overrides))
    except ValidationError as error:
        name, message = _first_problem(error)
        raise ConfigError(f"config override {name}: {message}") from None
    return {name: getattr(valid, name) for name in overrides}


def _first_problem(error: ValidationError) -> tuple[str, str]:
    """The field and message of a validation error's first problem, each on one line."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first["loc"]) or "?"
    message = one_line(str(first["msg"]).removeprefix("Value error, "), None)
    return name, message
