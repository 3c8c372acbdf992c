"""The `neo` command line.

Each subcommand lives in a module of its own, imported only when it is the one
asked for: `neo run` does not load the webhook server, the Action and the
PostgreSQL queue, which cost every `neo` process about 3.5 s of CPU before it
did anything. `neo --help` and a mistyped command list the subcommands from
`COMMANDS` alone, without importing any of them (that cost 2 s of CPU).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, NoReturn

from bot.exits import EXIT_USAGE
from bot.logs import debug_logging

__all__ = ["COMMANDS", "build_parser", "main"]


@dataclass(frozen=True, slots=True)
class Command:
    """Where a subcommand's parser and handler are: functions of one module."""

    module: str
    add_parser: str
    handler: str
    # What `neo --help` says of it: the `help` its module's parser gives it
    # (tests/bot/cli/test_main_listing.py holds the two equal).
    summary: str

    def load(self, attribute: str) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(import_module(self.module), attribute)
        return function


# In the order `neo --help` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command(
        "bot.cli.run", "add_run_parser", "run_command", "run the agent headless on a working tree"
    ),
    "jobs": Command(
        "bot.cli.jobs",
        "add_jobs_parser",
        "jobs_command",
        "list, inspect, retry and cancel queued jobs; see what they spent",
    ),
    "serve": Command(
        "bot.cli.serve",
        "add_serve_parser",
        "serve_command",
        "receive GitHub webhooks and queue the work they ask for",
    ),
    "worker": Command(
        "bot.cli.worker",
        "add_worker_parser",
        "worker_command",
        "run queued jobs (no webhook server)",
    ),
    "setup-app": Command(
        "bot.cli.setup_app",
        "add_setup_app_parser",
        "setup_app_command",
        "create Neo's GitHub App in a browser and write its credentials to .env",
    ),
    "action": Command(
        "bot.cli.action",
        "add_action_parser",
        "action_command",
        "run Neo as a GitHub Actions step (what action.yml calls)",
    ),
    "login": Command(
        "bot.cli.login",
        "add_login_parser",
        "login_command",
        "sign in to a model subscription (ChatGPT)",
    ),
    "logout": Command(
        "bot.cli.login", "add_logout_parser", "logout_command", "forget the stored ChatGPT sign-in"
    ),
    "skills": Command(
        "bot.cli.skills", "add_skills_parser", "skills_command", "the skills a run would see"
    ),
    "mcp": Command(
        "bot.cli.mcp", "add_mcp_parser", "mcp_command", "the MCP servers a run would get"
    ),
    "db": Command(
        "bot.cli.db", "add_db_parser", "db_command", "manage the shared PostgreSQL queue database"
    ),
    "env": Command(
        "bot.cli.env",
        "add_env_parser",
        "env_command",
        "list or prune the prepared environments kept on this host",
    ),
}


class _Parser(argparse.ArgumentParser):
    """Reports a usage mistake as one line, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None, *, listing: bool = False) -> argparse.ArgumentParser:
    """The `neo` parser: every subcommand's, or with `only`, that one's in full.

    The others are then names alone, which only `neo --help` would show, and
    it is never asked for with `only`. With `listing`, every subcommand is its
    name and summary alone: what `neo --help` shows, no module imported.
    """
    parser = _Parser(prog="neo", description="Neo, a coding agent that works on GitHub.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, command in COMMANDS.items():
        if listing:
            commands.add_parser(name, help=command.summary)
        elif only is None or name == only:
            command.load(command.add_parser)(commands)
        else:
            commands.add_parser(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The subcommand is the first argument (`neo` takes no option before it).
    asked = arguments[0] if arguments and arguments[0] in COMMANDS else None
    # No subcommand named: `neo --help`, or a mistake the listing reports.
    args = build_parser(asked, listing=asked is None).parse_args(arguments)
    if os.environ.get("NEO_DEBUG"):
        debug_logging()
    status: int = COMMANDS[args.command].load(COMMANDS[args.command].handler)(args)
    return status
