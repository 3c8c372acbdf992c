"""The settler: a finished job's spend and outcome written to a real queue, again with
backoff while it refuses, never twice, and given up after its bound with one line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bot.jobs import Conclusion, Job, JobOutcome, JobState
from bot.queue import SpendRecord, SqliteQueue
from bot.worker.running import Running
from bot.worker.settle import Backoff, Settler
from tests.bot.queue.factories import FakeClock, make_request

OUTCOME = JobOutcome(conclusion=Conclusion.SUCCESS, report="done")


class Time:
    """The settler's clock and sleep: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, object]]:
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neo.worker"]
    return [(line["event"], line.get("job")) for line in lines]


async def claimed(queue: SqliteQueue) -> Running:
    request = make_request("d-1")
    await queue.enqueue("d-1", [request])
    job = await queue.claim("w1", 60.0)
    assert job is not None
    return Running(job)


def spend(job: Job) -> tuple[SpendRecord, ...]:
    return (SpendRecord(job.id, "octo/hello", 42, "claude", 1_800_000_000.5, 0.25, 100, 10),)


async def test_written_at_once_when_the_queue_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "neo.worker")
    time = Time()
    async with SqliteQueue(tmp_path / "neo.db", clock=FakeClock()) as queue:
        running = await claimed(queue)
        settler = Settler(queue, "w1", clock=time.clock, sleep=time.sleep)
        await settler.settle(running, OUTCOME, spend(running.job))
        # Written again by a worker that could not tell it was: stored once.
        await queue.record_spend(spend(running.job))
        job = await queue.get(running.job.id)
        lines = await queue.spend(0.0)
    assert job is not None
    assert job.state is JobState.SUCCEEDED
    assert [(line.jobs, line.cost_usd) for line in lines] == [(1, 0.25)]
    assert time.slept == []
    assert logged(caplog) == []


async def test_a_job_another_worker_holds_keeps_its_outcome_but_the_spend_is_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "neo.worker")
    time = Time()
    clock = FakeClock()
    async with SqliteQueue(tmp_path / "neo.db", clock=clock) as queue:
        running = await claimed(queue)
        clock.advance(61)
        assert await queue.requeue_expired() == [running.job.id]
        settler = Settler(queue, "w1", clock=time.clock, sleep=time.sleep)
        await settler.settle(running, OUTCOME, spend(running.job))
        job = await queue.get(running.job.id)
        lines = await queue.spend(0.0)
    assert job is not None
    assert job.state is JobState.QUEUED
    assert [line.cost_usd for line in lines] == [0.25]
    assert logged(caplog) == [("finish_lost", running.job.id)]


async def test_a_queue_that_never_answers_is_tried_with_backoff_then_given_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "neo.worker")
    time = Time()
    queue = SqliteQueue(tmp_path / "neo.db", clock=FakeClock())
    running = await claimed(queue)
    await queue.close()  # every write now fails, as a database away does
    settler = Settler(
        queue,
        "w1",
        clock=time.clock,
        sleep=time.sleep,
        backoff=Backoff(first=1.0, most=8.0, give_up_after=60.0),
    )
    assert not settler.waiting

    await settler.settle(running, OUTCOME, spend(running.job))

    assert time.slept == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    # One line when it starts waiting and one when it gives up, not one per try.
    assert logged(caplog) == [
        ("outcome_unwritten", running.job.id),
        ("outcome_abandoned", running.job.id),
    ]
    assert not settler.waiting


async def test_while_an_outcome_waits_the_settler_says_so(tmp_path: Path) -> None:
    time = Time()
    queue = SqliteQueue(tmp_path / "neo.db", clock=FakeClock())
    running = await claimed(queue)
    await queue.close()
    seen: list[bool] = []
    settler: Settler

    async def sleep(seconds: float) -> None:
        seen.append(settler.waiting)
        await time.sleep(seconds)

    settler = Settler(
        queue, "w1", clock=time.clock, sleep=sleep, backoff=Backoff(give_up_after=3.0)
    )
    with settler.publishing(running.job.id):
        assert settler.published(running.job.id)
        await settler.settle(running, OUTCOME)
    assert seen == [True, True]
    assert not settler.waiting
    assert not settler.published(running.job.id)
