"""The `neo` command line."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import NoReturn

from bot.cli.action import action_command, add_action_parser
from bot.cli.common import EXIT_USAGE
from bot.cli.db import add_db_parser, db_command
from bot.cli.env import add_env_parser, env_command
from bot.cli.jobs import add_jobs_parser, jobs_command
from bot.cli.login import add_login_parser, add_logout_parser, login_command, logout_command
from bot.cli.mcp import add_mcp_parser, mcp_command
from bot.cli.run import add_run_parser, run_command
from bot.cli.serve import add_serve_parser, serve_command
from bot.cli.setup_app import add_setup_app_parser, setup_app_command
from bot.cli.skills import add_skills_parser, skills_command
from bot.cli.worker import add_worker_parser, worker_command
from bot.logs import debug_logging

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """Reports a usage mistake as one line, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neo", description="Neo, a coding agent that works on GitHub.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    add_run_parser(commands)
    add_jobs_parser(commands)
    add_serve_parser(commands)
    add_worker_parser(commands)
    add_setup_app_parser(commands)
    add_action_parser(commands)
    add_login_parser(commands)
    add_logout_parser(commands)
    add_skills_parser(commands)
    add_mcp_parser(commands)
    add_db_parser(commands)
    add_env_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if os.environ.get("NEO_DEBUG"):
        debug_logging()
    if args.command == "run":
        return run_command(args)
    if args.command == "jobs":
        return jobs_command(args)
    if args.command == "serve":
        return serve_command(args)
    if args.command == "worker":
        return worker_command(args)
    if args.command == "setup-app":
        return setup_app_command(args)
    if args.command == "action":
        return action_command(args)
    if args.command == "login":
        return login_command(args)
    if args.command == "logout":
        return logout_command(args)
    if args.command == "skills":
        return skills_command(args)
    if args.command == "mcp":
        return mcp_command(args)
    if args.command == "db":
        return db_command(args)
    if args.command == "env":
        return env_command(args)
    raise AssertionError(args.command)  # argparse allows only known commands
