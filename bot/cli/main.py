"""The `neo` command line.

Each subcommand lives in a module of its own, imported only when it is the one
asked for (or for `neo --help` and a mistyped command, which list them all):
`neo run` does not load the webhook server, the Action and the PostgreSQL
queue, which cost every `neo` process about 3.5 s of CPU before it did
anything.
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

    def load(self, attribute: str) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(import_module(self.module), attribute)
        return function


# In the order `neo --help` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command("bot.cli.run", "add_run_parser", "run_command"),
    "jobs": Command("bot.cli.jobs", "add_jobs_parser", "jobs_command"),
    "serve": Command("bot.cli.serve", "add_serve_parser", "serve_command"),
    "worker": Command("bot.cli.worker", "add_worker_parser", "worker_command"),
    "setup-app": Command("bot.cli.setup_app", "add_setup_app_parser", "setup_app_command"),
    "action": Command("bot.cli.action", "add_action_parser", "action_command"),
    "login": Command("bot.cli.login", "add_login_parser", "login_command"),
    "logout": Command("bot.cli.login", "add_logout_parser", "logout_command"),
    "skills": Command("bot.cli.skills", "add_skills_parser", "skills_command"),
    "mcp": Command("bot.cli.mcp", "add_mcp_parser", "mcp_command"),
    "db": Command("bot.cli.db", "add_db_parser", "db_command"),
    "env": Command("bot.cli.env", "add_env_parser", "env_command"),
}


class _Parser(argparse.ArgumentParser):
    """Reports a usage mistake as one line, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `neo` parser: every subcommand's, or with `only`, that one's in full.

    The others are then names alone, which only `neo --help` would show, and
    it is never asked for with `only`.
    """
    parser = _Parser(prog="neo", description="Neo, a coding agent that works on GitHub.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, command in COMMANDS.items():
        if only is None or name == only:
            command.load(command.add_parser)(commands)
        else:
            commands.add_parser(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The subcommand is the first argument (`neo` takes no option before it).
    asked = arguments[0] if arguments and arguments[0] in COMMANDS else None
    args = build_parser(asked).parse_args(arguments)
    if os.environ.get("NEO_DEBUG"):
        debug_logging()
    status: int = COMMANDS[args.command].load(COMMANDS[args.command].handler)(args)
    return status
