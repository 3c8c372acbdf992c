"""`neo db migrate`: bring a PostgreSQL queue database's schema up to this Neo's.

Run it once per upgrade, from any host, before starting the new `neo serve`
and `neo worker` processes: they refuse a database that is behind. Two hosts
migrating at once are serialised; a current database is left as it is. The
URL is never printed: it may hold a password.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TypeVar

from bot.cli.common import EXIT_OK, EXIT_USAGE
from bot.queue import is_postgres_url
from bot.queue.pg_schema import migrate
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


def db_command(args: argparse.Namespace) -> int:
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
    if migrated.before == migrated.after:
        print(f"the queue database is at schema version {migrated.after}; nothing to do")
    else:
        print(
            f"migrated the queue database from schema version {migrated.before} to {migrated.after}"
        )
    return EXIT_OK


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return EXIT_USAGE
