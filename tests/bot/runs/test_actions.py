"""The run page's actions on the queue: Stop names who, Steer keeps the message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.jobs import Conclusion, JobKind, JobState
from bot.queue import SqliteQueue
from bot.runs import steer_run, stop_run
from tests.bot.queue.factories import enqueue_one, make_request


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[SqliteQueue]:
    async with SqliteQueue(tmp_path / "neo.db") as opened:
        yield opened


async def test_stop_cancels_a_queued_run_in_the_name_of_who_pressed_it(queue: SqliteQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await stop_run(queue, job_id, "carol")
    job = await queue.get(job_id)
    assert job is not None
    assert job.state is JobState.CANCELLED
    assert job.result is not None
    assert (job.result.conclusion, job.result.cancelled_by) == (Conclusion.CANCELLED, "carol")
    assert job.result.error == "cancelled: @carol asked to stop before it ran"
    [record] = await queue.events_after(job_id, 0)
    assert (record.kind, record.data) == ("stop", {"by": "carol"})


async def test_stop_asks_a_running_run_to_stop_and_names_who_at_once(queue: SqliteQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    assert await queue.claim("w1", 60) is not None
    assert await stop_run(queue, job_id, "carol")
    job = await queue.get(job_id)
    assert job is not None
    assert (job.state, job.cancel_requested) == (JobState.RUNNING, True)
    assert job.result is not None
    assert job.result.cancelled_by == "carol"  # what the report of its worker says


async def test_stop_leaves_what_is_no_live_run_alone(queue: SqliteQueue) -> None:
    stop = make_request("d2", kind=JobKind.STOP, instruction="@neo stop")
    (stop_id,) = (await queue.enqueue("d2", [stop])).job_ids
    assert not await stop_run(queue, stop_id, "carol")
    assert not await stop_run(queue, 999, "carol")
    job_id = await enqueue_one(queue, "d1")
    assert await stop_run(queue, job_id, "carol")
    assert not await stop_run(queue, job_id, "dave")  # already cancelled


async def test_steer_keeps_the_message_for_the_run(queue: SqliteQueue) -> None:
    job_id = await enqueue_one(queue, "d1")
    kept = await steer_run(queue, job_id, "carol", "  use ISO dates\n")
    assert kept is not None
    assert (kept.job_id, kept.author, kept.text) == (job_id, "carol", "use ISO dates")
    assert await queue.take_steers(job_id) == [kept]
    with pytest.raises(ValueError, match="a steer needs some text"):
        await steer_run(queue, job_id, "carol", " ")
    assert await steer_run(queue, 999, "carol", "nobody runs") is None
