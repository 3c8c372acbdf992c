"""The queue under test on every backend: `open_backend` and `queue` run a test per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.queue import (
    DEFAULT_MAX_ATTEMPTS,
    MAX_RUN_EVENTS,
    JobQueue,
    PostgresQueue,
    SqliteQueue,
)
from tests.bot.queue.factories import FakeClock

__all__ = ["OpenBackend"]


@dataclass(frozen=True)
class OpenBackend:
    """One backend on this test's database: call it to open a queue there, with options.

    `where` is the database as the enqueuer subprocess takes it: a file path
    or a URL.
    """

    kind: str
    where: str
    clock: FakeClock

    @asynccontextmanager
    async def __call__(
        self,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        job_timeout: float | None = None,
        max_run_events: int = MAX_RUN_EVENTS,
    ) -> AsyncIterator[SqliteQueue | PostgresQueue]:
        queue: SqliteQueue | PostgresQueue
        if self.kind == "sqlite":
            queue = SqliteQueue(
                Path(self.where),
                clock=self.clock,
                max_attempts=max_attempts,
                job_timeout=job_timeout,
                max_run_events=max_run_events,
            )
        else:
            queue = PostgresQueue(
                self.where,
                clock=self.clock,
                max_attempts=max_attempts,
                job_timeout=job_timeout,
                max_run_events=max_run_events,
            )
        try:
            yield queue
        finally:
            await queue.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", "postgres"])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> OpenBackend:
    """The backend on a database of this test's own (the same one each time it is opened)."""
    if request.param == "postgres":
        return OpenBackend("postgres", request.getfixturevalue("postgres_url"), clock)
    return OpenBackend("sqlite", str(tmp_path / "data" / "neo.db"), clock)


@pytest.fixture
async def queue(open_backend: OpenBackend) -> AsyncIterator[JobQueue]:
    async with open_backend() as opened:
        yield opened
