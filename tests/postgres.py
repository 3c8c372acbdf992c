"""A throwaway PostgreSQL cluster for the tests, and a fresh database per test.

One cluster per pytest process (xdist worker), started on first use: initdb
(as the `postgres` user when we are root: initdb refuses root) into a temp
directory, trust auth, a free port on 127.0.0.1, its socket in that directory,
fsync off (nothing here must survive a power cut). Each test gets its own
database, copied from a migrated template. `NEO_TEST_POSTGRES_URL` names a
server to use instead. Tests never skip: no server is one failing line.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from bot.queue.pg_schema import migrate

__all__ = [
    "Cluster",
    "ClusterError",
    "PostgresServer",
    "cluster",
    "fresh_database",
    "own_cluster",
    "postgres_empty_url",
    "postgres_server",
    "postgres_url",
]

# Per process: xdist workers sharing a NEO_TEST_POSTGRES_URL server each make their own.
TEMPLATE = f"neo_template_{os.getpid()}"
_START_TIMEOUT = 60


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A reachable server: `url` is its maintenance database, as a superuser."""

    url: str

    def database_url(self, name: str) -> str:
        # A URL, as NEO_QUEUE_URL holds one: the maintenance database's, renamed.
        return urlsplit(self.url)._replace(path=f"/{name}").geturl()

    def create_database(self, name: str, *, template: str) -> str:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'.encode())
        return self.database_url(name)


class ClusterError(Exception):
    """PostgreSQL could not be started: one line."""


def _bin_dir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    # Debian keeps the server programs off PATH, one directory per major version.
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    if not candidates:
        raise ClusterError(
            "PostgreSQL's initdb is not installed: run scripts/ensure-postgres"
            " (or set NEO_TEST_POSTGRES_URL)"
        )
    return Path(candidates[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _run(argv: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(
        _as_server_user(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=_START_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stdout.decode(errors="replace").strip().splitlines()
        if log is not None and log.exists():
            lines += log.read_text(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit status {done.returncode}"
        raise ClusterError(f"PostgreSQL: {what} failed: {last}")


@dataclass(frozen=True, slots=True)
class Cluster:
    """A cluster of one's own: its superuser URL, and a server one may stop and start."""

    url: str
    pg_ctl: str
    data: Path
    log: Path
    options: str

    def database(self, name: str) -> str:
        """A new database on Neo's current schema, as NEO_QUEUE_URL names it."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        url = PostgresServer(self.url).database_url(name)
        migrate(url)
        return url

    def stop(self) -> None:
        """Stop the server as an operator does (`fast`: sessions are ended, commits kept)."""
        _run(
            [self.pg_ctl, "stop", "--wait", "--pgdata", str(self.data), "--mode", "fast"],
            "stopping the server",
            self.log,
        )

    def running(self) -> bool:
        """Whether the server is up (`pg_ctl status`: 0 running, 3 not)."""
        done = subprocess.run(
            _as_server_user([self.pg_ctl, "status", "--pgdata", str(self.data)]),
            capture_output=True,
            timeout=_START_TIMEOUT,
            check=False,
        )
        return done.returncode == 0

    def start(self) -> None:
        """Start it again on the same port."""
        _run(
            [
                self.pg_ctl,
                "start",
                "--wait",
                "--pgdata",
                str(self.data),
                "--log",
                str(self.log),
                "-o",
                self.options,
            ],
            "starting the server",
            self.log,
        )


@contextlib.contextmanager
def cluster(*, durable: bool = False) -> Iterator[str]:
    """A new cluster's superuser URL while in the block; `durable` keeps fsync on (benches)."""
    with own_cluster(durable=durable) as made:
        yield made.url


@contextlib.contextmanager
def own_cluster(*, durable: bool = False) -> Iterator[Cluster]:
    """A new cluster while in the block, stopped and removed after it."""
    bin_dir = _bin_dir()
    scratch = Path(tempfile.mkdtemp(prefix="neo-test-postgres-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(scratch, "postgres", "postgres")
        data, log = scratch / "data", scratch / "server.log"
        _run(
            [
                str(bin_dir / "initdb"),
                "--pgdata",
                str(data),
                "--auth",
                "trust",
                "--username",
                "postgres",
                "--encoding",
                "UTF8",
                "--no-sync",
            ],
            "initdb",
        )
        port = _free_port()
        options = f"-p {port} -k {scratch} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        made = Cluster(
            url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
            pg_ctl=str(bin_dir / "pg_ctl"),
            data=data,
            log=log,
            options=options,
        )
        pg_ctl = made.pg_ctl
        made.start()
        try:
            yield made
        finally:
            subprocess.run(
                _as_server_user([pg_ctl, "stop", "--pgdata", str(data), "--mode", "immediate"]),
                capture_output=True,
                timeout=_START_TIMEOUT,
                check=False,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The server, with TEMPLATE holding Neo's current schema."""
    with contextlib.ExitStack() as stack:
        url = os.environ.get("NEO_TEST_POSTGRES_URL")
        if not url:
            try:
                url = stack.enter_context(cluster())
            except ClusterError as error:
                pytest.fail(f"{error} (the tests' PostgreSQL)", pytrace=False)
        server = PostgresServer(url)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                # A template left by an earlier run (a reused pid) may be stale.
                conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}"'.encode())
                conn.execute(f'CREATE DATABASE "{TEMPLATE}" TEMPLATE template0'.encode())
        except psycopg.Error as error:
            line = (str(error).strip().splitlines() or ["no answer"])[0]
            host = conninfo_to_dict(url).get("host", "?")
            pytest.fail(f"PostgreSQL for the tests at {host}: {line}", pytrace=False)
        migrate(server.database_url(TEMPLATE))
        try:
            yield server
        finally:
            # Nothing left behind on a server that outlives the session.
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)'.encode())


_numbers = count()


def _fresh_name() -> str:
    # Unique per process (xdist workers share a NEO_TEST_POSTGRES_URL server).
    return f"neo_test_{os.getpid()}_{next(_numbers)}"


@contextlib.contextmanager
def _database(server: PostgresServer, template: str) -> Iterator[str]:
    name = _fresh_name()
    url = server.create_database(name, template=template)
    try:
        yield url
    finally:
        # FORCE: a connection the test left open must not keep it.
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def fresh_database(server: PostgresServer) -> contextlib.AbstractContextManager[str]:
    """A database of its own on Neo's current schema while in the block, for a
    fixture of wider scope than `postgres_url`'s."""
    return _database(server, TEMPLATE)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A database of its own for this test, on Neo's current schema."""
    with _database(postgres_server, TEMPLATE) as url:
        yield url


@pytest.fixture
def postgres_empty_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A database of its own for this test, never migrated."""
    with _database(postgres_server, "template0") as url:
        yield url
