"""What a run's gateway did, as values the job's result and the report carry (no SDK)."""

from __future__ import annotations

from dataclasses import dataclass

from runner.errors import ConfigError

__all__ = ["McpReport", "McpRequired", "McpSkipped", "Skipped"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A server the run goes without, and why."""

    server: str
    reason: str


@dataclass(frozen=True, slots=True)
class McpSkipped:
    """Published when the servers are up: those left out (the progress comment says so)."""

    skipped: tuple[Skipped, ...]


@dataclass(frozen=True, slots=True)
class McpReport:
    """What a run's gateway did: servers left out, tools called and how often."""

    skipped: tuple[Skipped, ...] = ()
    calls: tuple[tuple[str, int], ...] = ()


class McpRequired(ConfigError):
    """A server the configuration requires did not start: the run fails, in one line."""
