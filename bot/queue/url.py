"""Queue URLs: which backend, where, and the default every command shares."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bot.queue.base import JobQueue
from bot.queue.pg_schema import check_schema
from bot.queue.postgres import PostgresQueue
from bot.queue.run_log import MAX_RUN_EVENTS
from bot.queue.sqlite import SqliteQueue
from runner.errors import ConfigError
from runner.home import neo_home

SQLITE_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$NEO_DATA_DIR`, else Neo's home (`$NEO_HOME`, else `~/.neo`)."""
    env = os.environ if environ is None else environ
    configured = env.get("NEO_DATA_DIR")
    return Path(configured).expanduser() if configured else neo_home(env)


def sqlite_url(path: Path) -> str:
    """The URL of a SQLite queue file; an absolute path gives `sqlite:////abs/path.db`."""
    return f"{SQLITE_PREFIX}{path}"


def default_queue_url(environ: Mapping[str, str] | None = None) -> str:
    """`$NEO_QUEUE_URL`, else `sqlite:///<data dir>/neo.db`."""
    env = os.environ if environ is None else environ
    return env.get("NEO_QUEUE_URL") or sqlite_url(data_dir(env).absolute() / "neo.db")


def sqlite_path(url: str, *, source: str = "NEO_QUEUE_URL") -> Path:
    """The file a `sqlite:///PATH` URL names.

    As in SQLAlchemy, PATH is everything after the third slash:
    `sqlite:////var/lib/neo/neo.db` is absolute, `sqlite:///neo.db` is
    relative to the current directory. Raises ConfigError for anything else.
    Messages name the scheme, never the URL: it may hold a password.
    """
    scheme, separator, _ = url.partition("://")
    if not separator:
        raise ConfigError(f"the queue URL is not a URL; expected sqlite:///PATH ({source})")
    scheme = scheme.lower()
    if scheme != "sqlite":
        raise ConfigError(
            f"unsupported queue URL scheme {scheme!r};"
            f" use sqlite:///PATH or postgresql://… ({source})"
        )
    if not url.startswith(SQLITE_PREFIX):
        raise ConfigError(f"a sqlite queue URL is sqlite:///PATH ({source})")
    location = url[len(SQLITE_PREFIX) :]
    if not location or location == ":memory:" or "?" in location:
        raise ConfigError(f"a sqlite queue URL needs a file path and no options ({source})")
    return Path(location).absolute()


def is_postgres_url(url: str) -> bool:
    """Whether `url` names a PostgreSQL database (`postgresql://…` or `postgres://…`)."""
    scheme, separator, _ = url.partition("://")
    return bool(separator) and scheme.lower() in POSTGRES_SCHEMES


def open_queue(
    url: str,
    *,
    source: str = "NEO_QUEUE_URL",
    create: bool = True,
    job_timeout: float | None = None,
    listen: bool = True,
    max_run_events: int = MAX_RUN_EVENTS,
) -> JobQueue:
    """Open the queue `url` names, creating its SQLite file (and directory) if `create`.

    With `job_timeout` (NEO_JOB_TIMEOUT), no job keeps its lease much past
    that long after its claim (`bot.queue.base.WIND_DOWN`).

    A PostgreSQL database is never created here, nor migrated: its schema
    must be current (`neo db migrate`). `source` is where the URL came from,
    for error messages. Without `listen` a PostgreSQL queue does not hear of
    other hosts' new jobs: a process that runs no workers has no use for it,
    and each job queued anywhere would wake it. `max_run_events` bounds each
    job's event log (NEO_RUN_MAX_EVENTS).
    """
    if is_postgres_url(url):
        check_schema(url, source=source)
        return PostgresQueue(
            url, job_timeout=job_timeout, listen=listen, max_run_events=max_run_events
        )
    path = sqlite_path(url, source=source)
    if not create and not path.exists():
        raise ConfigError(f"no queue database at {path} ({source})")
    try:
        return SqliteQueue(
            path, create=create, job_timeout=job_timeout, max_run_events=max_run_events
        )
    except ConfigError as error:
        raise ConfigError(f"{error} ({source})") from None
