"""Neo's configuration: `.github/neo.yml` per repository; `settings` holds the service's own."""

from bot.config.cron import Cron
from bot.config.error_comment import render_config_error
from bot.config.loading import CONFIG_PATH, RepoConfigError, parse_repo_config
from bot.config.model import Budgets, Fallback, RepoConfig, Schedule

__all__ = [
    "CONFIG_PATH",
    "Budgets",
    "Cron",
    "Fallback",
    "RepoConfig",
    "RepoConfigError",
    "Schedule",
    "parse_repo_config",
    "render_config_error",
]
