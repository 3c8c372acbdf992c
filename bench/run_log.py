"""Jobs' event logs (bot/queue/run_log*.py): what an append costs, and how soon a
waiting reader elsewhere has it, on SQLite and on a durable PostgreSQL.

For each backend, one writer queue appends batches of 10 records (a worker's
100 ms flush of a busy run) to one job; a reader on another queue object (its
own connections: what another process is) waits with `wait_events`. Printed:
the append's latency p50/p99, and append-returned to reader-has-it p50/p99;
then appends/s of 8 jobs written at once, and this process's CPU per append
there (the client's share: what round trips cost a worker).

    uv run python -m bench.run_log [--rounds 300] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

from bench.postgres_queue import fresh_database
from bot.queue import JobQueue, PostgresQueue, SqliteQueue
from tests.postgres import cluster

BATCH = 10


def _batch(n: int) -> list[tuple[float, str, dict[str, object]]]:
    return [
        (time.time(), "tool_result", {"call_id": f"c{n}.{i}", "output": "x" * 400})
        for i in range(BATCH)
    ]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def latency(
    writer: JobQueue, reader: JobQueue, rounds: int
) -> tuple[list[float], list[float]]:
    appends: list[float] = []
    visible: list[float] = []
    after = 0
    for n in range(rounds):
        waiting = asyncio.create_task(reader.wait_events(1, after, 30.0))
        await asyncio.sleep(0.02)  # the reader is waiting, as a follower is
        started = time.perf_counter()
        await writer.append_events(1, _batch(n))
        done = time.perf_counter()
        found = await waiting
        seen = time.perf_counter()
        assert found, "the reader timed out"
        after = found[-1].seq
        # The reader may return with part of the batch: wait for the rest.
        while after < (n + 1) * BATCH:
            after = (await reader.events_after(1, after))[-1].seq
        appends.append(done - started)
        visible.append(seen - done)
    return appends, visible


async def throughput(writer: JobQueue, jobs: int = 8, per_job: int = 100) -> tuple[float, float]:
    """Appends/s of `jobs` written at once, and this process's CPU seconds per append."""

    async def one(job: int) -> None:
        for n in range(per_job):
            await writer.append_events(100 + job, _batch(n))

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(job) for job in range(jobs)))
    appends = jobs * per_job
    return appends / (time.perf_counter() - started), (time.process_time() - cpu) / appends


async def run(name: str, writer: JobQueue, reader: JobQueue, rounds: int) -> None:
    try:
        appends, visible = await latency(writer, reader, rounds)
        rate, cpu = await throughput(writer)
    finally:
        await reader.close()
        await writer.close()
    print(
        f"{name:10} append of {BATCH}: p50 {_pct(appends, 0.5):.2f} ms,"
        f" p99 {_pct(appends, 0.99):.2f} ms;"
        f" to a waiting reader elsewhere: p50 {_pct(visible, 0.5):.2f} ms,"
        f" p99 {_pct(visible, 0.99):.2f} ms (mean {statistics.mean(visible) * 1000:.2f});"
        f" {rate:,.0f} appends/s (8 jobs at once), {cpu * 1000:.2f} ms client CPU each"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--url", help="a PostgreSQL superuser URL (default: a throwaway cluster)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "neo.db"
        asyncio.run(run("sqlite", SqliteQueue(path), SqliteQueue(path), args.rounds))
    with contextlib.ExitStack() as stack:
        server = args.url or stack.enter_context(cluster(durable=True))
        url = stack.enter_context(fresh_database(server, "neo_bench_run_log"))
        asyncio.run(
            run(
                "postgresql",
                PostgresQueue(url, listen=False),
                PostgresQueue(url, listen=False),
                args.rounds,
            )
        )


if __name__ == "__main__":
    main()
