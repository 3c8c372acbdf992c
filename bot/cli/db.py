"""`neo db migrate` and `neo db copy`: the PostgreSQL queue database's schema and filling.

`migrate` runs once per upgrade, from any host, before the new `neo serve`
and `neo worker` processes start: they refuse a database that is behind.
`copy` moves a SQLite queue into a new PostgreSQL one (bot/cli/db_copy.py).
A URL is never printed: it may hold a password.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TypeVar

from bot.exits import EXIT_OK, EXIT_USAGE
from runner.errors import ConfigError

__all__ = ["add_db_parser", "db_command"]

Parser = TypeVar("Parser", bound=argparse.ArgumentParser)


def add_db_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add `db` to the `neo` subcommands (`commands` from add_subparsers)."""
    db = commands.add_parser(
        "db",
        help="manage the shared PostgreSQL queue database",
        description="Manage the PostgreSQL database a scaled-out Neo shares.",
    )
    actions = db.add_subparsers(dest="db_command", required=True, parser_class=type(db))
    migrating = actions.add_parser(
        "migrate", help="apply Neo's schema to the queue database (idempotent)"
    )
    migrating.add_argument(
        "--queue-url", metavar="URL", help="the database (default: $NEO_QUEUE_URL)"
    )
    copying = actions.add_parser(
        "copy",
        help="move a SQLite queue's jobs, sessions and spend into a PostgreSQL database",
        description=(
            "Copy the jobs (with their dedupe keys and deliveries), the thread sessions and"
            " the spend records of a stopped SQLite queue into a migrated PostgreSQL"
            " database that has no jobs yet."
        ),
    )
    copying.add_argument("source", metavar="SOURCE", help="sqlite:///PATH of the old queue")
    copying.add_argument(
        "dest",
        metavar="DEST",
        nargs="?",
        help="postgresql://… of the new queue (default: $NEO_QUEUE_URL, which keeps a"
        " password out of the process list)",
    )
    copying.add_argument(
        "--data-dir",
        metavar="DIR",
        type=Path,
        help="where the old service kept its sessions (default: $NEO_DATA_DIR,"
        " else the queue file's directory)",
    )


def db_command(args: argparse.Namespace) -> int:
    # The queue's modules and psycopg load for the command, not to declare its flags.
    from bot.queue import is_postgres_url
    from bot.queue.pg_schema import migrate

    if args.db_command == "copy":
        return _copy(args)
    if args.queue_url:
        url, source = args.queue_url, "--queue-url"
    else:
        url, source = os.environ.get("NEO_QUEUE_URL", ""), "NEO_QUEUE_URL"
    if not url:
        return _fail("neo: error: no queue database: set NEO_QUEUE_URL or pass --queue-url")
    if not is_postgres_url(url):
        # The SQLite queue migrates its own file when it opens it.
        return _fail(
            f"neo: error: `neo db migrate` works on postgresql:// URLs;"
            f" a SQLite queue migrates itself ({source})"
        )
    try:
        migrated = migrate(url, source=source)
    except ConfigError as error:
        return _fail(f"neo: error: {error}")
    if migrated.before != migrated.after:
        print(
            f"migrated the queue database from schema version {migrated.before} to {migrated.after}"
        )
    if migrated.procrastinate:
        print(f"applied procrastinate's migrations {', '.join(migrated.procrastinate)}")
    if migrated.before == migrated.after and not migrated.procrastinate:
        print(f"the queue database is at schema version {migrated.after}; nothing to do")
    return EXIT_OK


def _copy(args: argparse.Namespace) -> int:
    from bot.cli.db_copy import copy_queue
    from bot.queue import data_dir, is_postgres_url, sqlite_path

    if not args.source.lower().startswith("sqlite:"):
        return _fail("neo: error: `neo db copy` copies from a sqlite:///PATH queue (SOURCE)")
    dest_url, dest = args.dest, "DEST"
    if dest_url is None:
        dest_url, dest = os.environ.get("NEO_QUEUE_URL", ""), "NEO_QUEUE_URL"
    if not dest_url:
        return _fail("neo: error: no destination: set NEO_QUEUE_URL or pass DEST")
    if not is_postgres_url(dest_url):
        return _fail(f"neo: error: `neo db copy` copies into a postgresql:// database ({dest})")
    try:
        source = sqlite_path(args.source, source="SOURCE")
        if args.data_dir is not None:
            sessions_home = args.data_dir
        elif os.environ.get("NEO_DATA_DIR"):
            sessions_home = data_dir()
        else:
            sessions_home = source.parent
        copied = copy_queue(source, sessions_home, dest_url, dest=dest)
    except ConfigError as error:
        return _fail(f"neo: error: {error}")
    print(copied.summary())
    return EXIT_OK


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return EXIT_USAGE
