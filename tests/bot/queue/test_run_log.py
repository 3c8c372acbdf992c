"""The `RunLog` contract, on every backend: jobs' event logs in SQLite and PostgreSQL.

Each test runs once per backend, on a fresh database. A second queue opened on
the same database is another connection (and, for SQLite, another writer and
another set of waiting readers): what another process would be.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from bot.queue import JobQueue, RunEvent, RunLog, WakingQueue
from tests.bot.queue.conftest import OpenBackend
from tests.bot.queue.factories import FakeClock

ROOT = Path(__file__).resolve().parents[3]
# A bound on how long a test waits for what should come at once: never reached
# when it works, and a failure rather than a hang when it does not.
PATIENCE = 60.0


def _log(queue: JobQueue) -> RunLog:
    assert isinstance(queue, RunLog)
    return queue


def _events(
    n: int, *, at: float = 1000.0, kind: str = "text"
) -> list[tuple[float, str, dict[str, object]]]:
    return [(at + i, kind, {"text": f"event {i}"}) for i in range(n)]


async def test_events_come_back_numbered_in_order(open_backend: OpenBackend) -> None:
    async with open_backend() as queue:
        log = _log(queue)
        assert await log.events_after(7, 0) == []
        assert await log.append_events(7, []) == 0
        assert await log.append_events(7, [(10.5, "state", {"state": "running"})]) == 1
        data: dict[str, object] = {"call_id": "c1", "name": "bash", "args": {"command": "ls -la"}}
        last = await log.append_events(
            7, [(11.0, "tool_call", data), (11.5, "text", {"text": "é"})]
        )
        assert last == 3
        assert await log.append_events(7, []) == 3
        # Another job's numbering is its own.
        assert await log.append_events(8, _events(2)) == 2

        events = await log.events_after(7, 0)
        assert events == [
            RunEvent(7, 1, 10.5, "state", {"state": "running"}),
            RunEvent(7, 2, 11.0, "tool_call", data),
            RunEvent(7, 3, 11.5, "text", {"text": "é"}),
        ]
        assert await log.events_after(7, 1, limit=1) == events[1:2]
        assert await log.events_after(7, 3) == []


async def test_concurrent_appends_from_two_connections_leave_no_gap(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as first, open_backend() as second:
        logs = [_log(first), _log(second)]

        async def writer(n: int) -> list[int]:
            lasts = []
            for batch in range(10):
                # Each batch's three events say who wrote them, in order.
                events: list[tuple[float, str, dict[str, object]]] = [
                    (1.0, "text", {"w": n, "b": batch, "i": i}) for i in range(3)
                ]
                lasts.append(await logs[n % 2].append_events(1, events))
            return lasts

        lasts = await asyncio.gather(*(writer(n) for n in range(8)))

        events = await logs[0].events_after(1, 0, limit=10_000)
        assert [e.seq for e in events] == list(range(1, 241))
        # A batch is stored whole, in its order, and its append returned its last number.
        for start in range(0, 240, 3):
            batch = events[start : start + 3]
            assert [e.data["i"] for e in batch] == [0, 1, 2]
            assert len({(e.data["w"], e.data["b"]) for e in batch}) == 1
        by_writer = {(e.data["w"], e.data["b"]): e.seq for e in events if e.data["i"] == 2}
        assert [[by_writer[(n, b)] for b in range(10)] for n in range(8)] == lasts


async def test_a_reader_resuming_after_its_last_seq_misses_nothing_and_repeats_nothing(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue, open_backend() as other:
        writer, reader = _log(queue), _log(other)

        async def write() -> None:
            for n in range(30):
                await writer.append_events(3, _events(5, at=float(n)))

        task = asyncio.create_task(write())
        seen: list[RunEvent] = []
        while len(seen) < 150:
            # Small pages, read while the writer writes: each resumes where the last ended.
            after = seen[-1].seq if seen else 0
            page = await reader.events_after(3, after, limit=7)
            seen += page or await reader.wait_events(3, after, PATIENCE)
        await task
        assert [e.seq for e in seen] == list(range(1, 151))


async def test_wait_events_wakes_on_an_append_by_another_connection(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue, open_backend() as other:
        reader, writer = _log(queue), _log(other)
        await writer.append_events(5, _events(1))
        # Nothing after 1 yet: a short wait ends empty.
        assert await reader.wait_events(5, 1, 0.05) == []
        # Events already there come back without waiting.
        assert [e.seq for e in await reader.wait_events(5, 0, PATIENCE * 10)] == [1]

        waiting = asyncio.create_task(reader.wait_events(5, 1, PATIENCE * 10))
        await asyncio.sleep(0.2)  # the reader is waiting (the test holds either way)
        assert not waiting.done()
        await writer.append_events(5, _events(2))
        # Far sooner than its own timeout: the append woke it.
        found = await asyncio.wait_for(waiting, PATIENCE)
        assert [e.seq for e in found] == [2, 3]


async def test_wait_events_wakes_on_an_append_by_another_process(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue:
        reader = _log(queue)
        waiting = asyncio.create_task(reader.wait_events(9, 0, PATIENCE * 10))
        script = (
            "import asyncio, sys\n"
            "from pathlib import Path\n"
            "from bot.queue import SqliteQueue, is_postgres_url, open_queue\n"
            "async def main(where):\n"
            "    q = open_queue(where) if is_postgres_url(where) else SqliteQueue(Path(where))\n"
            "    await q.append_events(9, [(1.0, 'text', {'text': 'from afar'})])\n"
            "    await q.close()\n"
            "asyncio.run(main(sys.argv[1]))\n"
        )
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", script, open_backend.where],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        assert done.returncode == 0, done.stderr
        found = await asyncio.wait_for(waiting, PATIENCE)
        assert [(e.seq, e.data) for e in found] == [(1, {"text": "from afar"})]


async def test_past_the_bound_events_are_dropped_and_one_truncated_event_counts_them(
    open_backend: OpenBackend,
) -> None:
    async with open_backend(max_run_events=5) as queue:
        log = _log(queue)
        await log.append_events(1, [(1.0, "state", {"state": "running"})])
        assert await log.append_events(1, _events(3)) == 4
        # Two more fit (the fifth place is the truncated event's), then three go.
        assert await log.append_events(1, _events(2, kind="tool_call") + _events(2)) == 6
        # A state event is kept past the bound: a reader must learn how the job ended.
        last = await log.append_events(
            1, [*_events(1, kind="thinking"), (9.0, "state", {"state": "finished"})]
        )
        assert last == 7

        events = await log.events_after(1, 0)
        assert [e.kind for e in events] == [
            "state",
            "text",
            "text",
            "text",
            "tool_call",
            "truncated",
            "state",
        ]
        assert [e.seq for e in events] == list(range(1, 8))
        truncated = events[5]
        assert truncated.at == 1001.0  # the first dropped event's time
        assert truncated.data == {
            "limit": 5,
            "dropped": 4,
            "kinds": {"tool_call": 1, "text": 2, "thinking": 1},
            "first_at": 1001.0,
        }
        # Another queue on the database applies the same bound to what is there.
        assert await log.append_events(1, _events(1)) == 7
        assert (await log.events_after(1, 5, limit=1))[0].data["dropped"] == 5


async def test_concurrent_appends_past_the_bound_count_every_dropped_event(
    open_backend: OpenBackend,
) -> None:
    # Each append reads the truncated event's counts after taking the job's
    # lock: one that read them before would lose what the append it waited
    # for had just counted.
    async with open_backend(max_run_events=3) as first, open_backend(max_run_events=3) as second:
        logs = [_log(first), _log(second)]
        await logs[0].append_events(1, _events(4))

        async def writer(n: int) -> None:
            for _ in range(10):
                await logs[n % 2].append_events(1, _events(2, kind=f"w{n}"))

        await asyncio.gather(*(writer(n) for n in range(6)))

        events = await logs[1].events_after(1, 0)
        assert [e.kind for e in events] == ["text", "text", "truncated"]
        assert events[2].data["dropped"] == 2 + 6 * 10 * 2
        assert events[2].data["kinds"] == {"text": 2, **{f"w{n}": 20 for n in range(6)}}


async def test_prune_removes_whole_logs_whose_last_event_is_older_than_the_cut(
    open_backend: OpenBackend,
) -> None:
    async with open_backend() as queue:
        log = _log(queue)
        await log.append_events(1, _events(3, at=100.0))
        # An old start, a recent end: kept whole.
        await log.append_events(2, _events(2, at=100.0) + _events(1, at=500.0))
        await log.append_events(3, _events(1, at=50.0))

        assert await log.prune_events(200.0) == 4
        assert await log.events_after(1, 0) == []
        assert await log.events_after(3, 0) == []
        assert [e.seq for e in await log.events_after(2, 0)] == [1, 2, 3]
        assert await log.prune_events(200.0) == 0


async def test_the_waking_queue_passes_the_log_through(
    open_backend: OpenBackend, clock: FakeClock
) -> None:
    async with open_backend() as inner:
        queue = WakingQueue(inner)
        log: RunLog = queue
        assert await log.append_events(4, _events(2)) == 2
        assert [e.seq for e in await log.wait_events(4, 0, 1.0)] == [1, 2]
        assert [e.seq for e in await log.events_after(4, 1)] == [2]
        assert await log.prune_events(clock.now) == 2
