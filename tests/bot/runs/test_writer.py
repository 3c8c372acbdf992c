"""A run's event log written while it runs (bot/runs/writer.py), on a real SQLite queue."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.queue import SqliteQueue
from bot.runs import writer as writer_module
from bot.runs.records import Limits, Record
from bot.runs.writer import EventWriter
from runner.agent.events import TextDelta, ToolStarted, TurnStarted

NOW = 1_800_000_000.0


class Lines:
    """The worker's log lines, as the writer reports them."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


async def test_records_reach_the_log_in_order_while_the_job_runs(tmp_path: Path) -> None:
    lines = Lines()
    async with SqliteQueue(tmp_path / "neo.db") as queue:
        async with EventWriter(queue, 7, clock=lambda: NOW, report=lines, every=0.01) as events:
            events.state("running")
            # Before the run starts, the runner's events are not records.
            events.event(TurnStarted(1))
            events.start_run(started_at=NOW, limits=Limits(max_turns=5), secrets=("tok3n-value",))
            events.event(TextDelta("Looking"))
            events.event(TextDelta(" around."))
            # The streamed text is written at the next flush, without waiting for the answer.
            found = await queue.wait_events(7, 1, 30.0)
            assert [(e.kind, e.data) for e in found] == [("text", {"text": "Looking around."})]
            events.event(ToolStarted("c1", "bash", {"command": "echo tok3n-value"}))
            events.state("finished", conclusion="success")
            assert events.ended
        logged = await queue.events_after(7, 0)
    assert [(e.seq, e.kind) for e in logged] == [
        (1, "state"),
        (2, "text"),
        (3, "tool_call"),
        (4, "state"),
    ]
    assert logged[2].data["args"] == {"command": "echo ***"}
    assert logged[3].data == {"state": "finished", "conclusion": "success"}
    assert lines.lines == []


async def test_a_database_that_fails_costs_the_log_not_the_job(tmp_path: Path) -> None:
    lines = Lines()
    queue = SqliteQueue(tmp_path / "neo.db")
    await queue.close()  # every append now fails
    async with EventWriter(queue, 7, clock=lambda: NOW, report=lines, every=0.01) as events:
        events.state("running")
        await asyncio.sleep(0.05)
        events.state("finished", conclusion="success")
    # No error reached the job; the worker's log says what was lost, once per run of failures.
    assert [event for event, _ in lines.lines] == ["run_events_failed"]
    assert lines.lines[0][1]["job"] == 7
    assert "closed" in lines.lines[0][1]["error"]


async def test_what_piles_up_past_the_bound_is_dropped_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "MAX_PENDING", 5)
    lines = Lines()
    async with SqliteQueue(tmp_path / "neo.db") as queue:
        # No flush before the end: everything waits in memory.
        async with EventWriter(queue, 7, clock=lambda: NOW, report=lines, every=3600) as events:
            backlog: list[Record] = [(NOW + n, "text", {"text": str(n)}) for n in range(8)]
            events.add(*backlog)
            events.state("finished", conclusion="success")  # kept whatever is dropped
        logged = await queue.events_after(7, 0)
    assert [e.kind for e in logged] == ["text"] * 5 + ["truncated", "state"]
    assert [e.data["text"] for e in logged[:5]] == ["0", "1", "2", "3", "4"]
    assert logged[5].data == {"dropped": 3, "reason": "the database was slow"}
    assert [event for event, _ in lines.lines] == ["run_events_dropped"]
