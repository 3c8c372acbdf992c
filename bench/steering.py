"""What steering costs a run: the queue's answer at a turn boundary.

The agent loop asks its steering source at each turn boundary, and nearly
always nobody has steered: that answer is the cost every run pays. Prints,
for SQLite (durable, WAL) and PostgreSQL (a throwaway local cluster, fsync on),
the p50/p99 of `take_steers` with nothing waiting, while the queue holds
`--runs` running jobs, and then with one steer waiting (a write: it is taken
and deleted); and a model call's usual length for scale (several seconds).

    uv run python -m bench.steering [--runs 200] [--takes 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.postgres_queue import fresh_database
from bench.queue import request
from bot.queue import JobQueue, PostgresQueue, SqliteQueue
from tests.postgres import cluster


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms"


async def _measure(name: str, queue: JobQueue, runs: int, takes: int) -> None:
    requests = [request(f"d{n}", n) for n in range(runs)]
    for n, one in enumerate(requests):
        await queue.enqueue(f"d{n}", [one])
    jobs = [job for _ in range(runs) if (job := await queue.claim("w", 600.0)) is not None]
    empty: list[float] = []
    for n in range(takes):
        job = jobs[n % len(jobs)]
        started = time.perf_counter()
        assert await queue.take_steers(job.id) == []
        empty.append(time.perf_counter() - started)
    waiting: list[float] = []
    for n in range(takes // 10):
        job = jobs[n % len(jobs)]
        await queue.steer(job.id, "mona", "use ISO dates")
        started = time.perf_counter()
        assert len(await queue.take_steers(job.id)) == 1
        waiting.append(time.perf_counter() - started)
    print(f"{name}: nothing waiting {_ms(empty)}; one steer waiting {_ms(waiting)}")


async def main(runs: int, takes: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        async with SqliteQueue(Path(scratch) / "neo.db") as queue:
            await _measure(f"SQLite, {runs} running jobs", queue, runs, takes)
    with cluster(durable=True) as server, fresh_database(server, "neo_steering") as url:
        async with PostgresQueue(url) as queue:
            await _measure(f"PostgreSQL, {runs} running jobs", queue, runs, takes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--takes", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.takes))
