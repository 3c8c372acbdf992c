"""The run page: a job's event records, and the web pages, live stream, sign-in and
actions that show them (docs/architecture.md, "The run page")."""

from bot.runs.actions import steer_run, stop_run

__all__ = ["steer_run", "stop_run"]
