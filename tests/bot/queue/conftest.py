"""The queue under test on every backend: `open_backend` and `queue` run a test per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from bot.queue import DEFAULT_MAX_ATTEMPTS, JobQueue, PostgresQueue, SqliteQueue
from tests.bot.queue.factories import FakeClock

__all__ = ["OpenBackend"]

OpenBackend = Callable[..., AbstractAsyncContextManager[JobQueue]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", "postgres"])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> OpenBackend:
    """Opens the backend on this test's database (the same one each time), with options."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else ""

    @asynccontextmanager
    async def opened(*, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> AsyncIterator[JobQueue]:
        queue: SqliteQueue | PostgresQueue
        if request.param == "sqlite":
            queue = SqliteQueue(
                tmp_path / "data" / "neo.db", clock=clock, max_attempts=max_attempts
            )
        else:
            queue = PostgresQueue(url, clock=clock, max_attempts=max_attempts)
        try:
            yield queue
        finally:
            await queue.close()

    return opened


@pytest.fixture
async def queue(open_backend: OpenBackend) -> AsyncIterator[JobQueue]:
    async with open_backend() as opened:
        yield opened
