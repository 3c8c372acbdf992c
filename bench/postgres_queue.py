"""The PostgreSQL queue against the SQLite one, on a local, durable server.

Starts a throwaway PostgreSQL cluster (fsync on, synchronous commit: an
acknowledged enqueue is on disk), unless `--url` names a migrated database,
and prints:

- acknowledged enqueues/s at concurrency 32, with p50/p99 latency, SQLite
  then PostgreSQL (bench/queue.py's measurement);
- claim-to-start latency: 8 workers, each its own queue (as on 8 hosts),
  wait as the worker loop does (the queue's LISTEN event, else a 1 s
  poll); jobs are queued one at a time by another queue, and the figure is
  from `enqueue` returning to a worker holding the job; then with LISTEN
  off, polling only, for comparison;
- 10,000 queued jobs drained by those 8 workers (claim, then finish), with
  the number of jobs run more than once (must be 0): on a fresh table, then
  on one whose statistics are current (procrastinate's fetch is planned from
  them).

    uv run python -m bench.postgres_queue [--deliveries 20000] [--jobs 10000] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from bench.queue import acknowledged, request
from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import PostgresQueue, SqliteQueue
from bot.queue.pg_schema import migrate
from tests.postgres import cluster

WORKERS = 8
LEASE = 60.0
POLL_EVERY = 1.0


@contextlib.contextmanager
def fresh_database(server: str, name: str) -> Iterator[str]:
    """A new, migrated database on `server` (a superuser URL), dropped afterwards."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    url = server.rsplit("/", 1)[0] + "/" + name
    migrate(url)
    try:
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


async def enqueue_figures(url: str, deliveries: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        async with SqliteQueue(Path(scratch) / "neo.db") as sqlite:
            figures = await acknowledged(sqlite, deliveries, concurrency, None)
        print(figures.line(f"sqlite, concurrency {concurrency}"))
    async with PostgresQueue(url, max_connections=concurrency, listen=False) as postgres:
        # A warm pool, as a running server has: connections are not what is measured.
        await acknowledged(postgres, concurrency * 4, concurrency, None, prefix="warm-")
        figures = await acknowledged(postgres, deliveries, concurrency, None)
    print(figures.line(f"postgres, concurrency {concurrency}"))


@dataclass
class Runs:
    """What the workers did: when each job first started, how often each ran."""

    target: int
    started: dict[int, float] = field(default_factory=dict)
    count: Counter[int] = field(default_factory=Counter)
    all_started: asyncio.Event = field(default_factory=asyncio.Event)


async def worker(queue: PostgresQueue, name: str, stop: asyncio.Event, runs: Runs) -> None:
    """The worker loop's waiting: claim until nothing is left, then the event or the poll."""
    while not stop.is_set():
        queue.queued.clear()
        while (job := await queue.claim(name, LEASE)) is not None:
            runs.started.setdefault(job.id, time.perf_counter())
            runs.count[job.id] += 1
            await queue.finish(job.id, name, JobOutcome(conclusion=Conclusion.SUCCESS))
            if len(runs.started) >= runs.target:
                runs.all_started.set()
        waits = [asyncio.ensure_future(queue.queued.wait()), asyncio.ensure_future(stop.wait())]
        await asyncio.wait(waits, timeout=POLL_EVERY, return_when=asyncio.FIRST_COMPLETED)
        for waiting in waits:
            waiting.cancel()


async def claim_to_start(url: str, jobs: int, *, listen: bool) -> float:
    """The median seconds from `enqueue` returning to a worker holding the job."""
    queues = [PostgresQueue(url, max_connections=2, listen=listen) for _ in range(WORKERS)]
    stop = asyncio.Event()
    runs = Runs(target=jobs)
    queued_at: dict[int, float] = {}
    async with PostgresQueue(url, listen=False) as producer:
        for queue in queues:
            await queue.counts()  # opened, listening
        await asyncio.sleep(0.5)
        tasks = [
            asyncio.create_task(worker(queue, f"w{n}", stop, runs))
            for n, queue in enumerate(queues)
        ]
        for n in range(jobs):
            # Spaced out, each on a thread of its own: each claim is a fresh wake-up.
            await asyncio.sleep(0.05)
            delivery_id = f"latency-{listen}-{n}"
            (job_id,) = (await producer.enqueue(delivery_id, [request(delivery_id, n)])).job_ids
            queued_at[job_id] = time.perf_counter()
        await runs.all_started.wait()
        stop.set()
        await asyncio.gather(*tasks)
    for queue in queues:
        await queue.close()
    return statistics.median(runs.started[job_id] - queued_at[job_id] for job_id in queued_at)


async def drain(url: str, jobs: int, *, analyzed: bool) -> None:
    async with PostgresQueue(url, max_connections=32, listen=False) as producer:
        await acknowledged(producer, jobs, 32, None, prefix="drain-")
    if analyzed:
        # What autovacuum does within a minute or so of the burst.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
    queues = [PostgresQueue(url, max_connections=2) for _ in range(WORKERS)]
    stop = asyncio.Event()
    runs = Runs(target=jobs)
    began = time.perf_counter()
    tasks = [
        asyncio.create_task(worker(queue, f"w{n}", stop, runs)) for n, queue in enumerate(queues)
    ]
    async with PostgresQueue(url, listen=False) as observer:
        await runs.all_started.wait()
        elapsed = time.perf_counter() - began
        stop.set()
        await asyncio.gather(*tasks)
        counts = await observer.counts()
    for queue in queues:
        await queue.close()
    duplicates = sum(1 for count in runs.count.values() if count > 1)
    stats = "with table statistics" if analyzed else "before any ANALYZE"
    print(
        f"drained {len(runs.count)} jobs with {WORKERS} workers, {stats}, in {elapsed:.1f} s"
        f" ({len(runs.count) / elapsed:.0f} jobs/s); run more than once: {duplicates};"
        f" succeeded {counts[JobState.SUCCEEDED]}, queued {counts[JobState.QUEUED]}"
    )


def bench(server: str, args: argparse.Namespace) -> None:
    # A database per run: each starts from an empty queue.
    with fresh_database(server, "neo_bench_enqueue") as url:
        asyncio.run(enqueue_figures(url, args.deliveries, args.concurrency))
    for listen in (True, False):
        with fresh_database(server, "neo_bench_claim") as url:
            median = asyncio.run(claim_to_start(url, args.latency_jobs, listen=listen))
        how = "LISTEN/NOTIFY" if listen else "polling every 1 s"
        print(f"claim-to-start, {WORKERS} workers, {how:<18} p50 {median * 1000:7.2f} ms")
    # procrastinate's fetch is planned from the table's statistics: on a table
    # filled faster than autovacuum analyses it, each claim sorts every
    # waiting job.
    for analyzed in (False, True):
        with fresh_database(server, "neo_bench_drain") as url:
            asyncio.run(drain(url, args.jobs, analyzed=analyzed))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-jobs", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--url", help="a PostgreSQL superuser URL (default: a throwaway cluster)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        server = args.url or stack.enter_context(cluster(durable=True))
        bench(server, args)


if __name__ == "__main__":
    main()
