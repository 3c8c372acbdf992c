"""Durable enqueue throughput and latency of the SQLite queue.

Producers stand in for the webhook server's request handlers: each delivery
is one `enqueue` of one job request, and `enqueue` returns only after its
commit is fsynced. Three runs, each on a fresh database:

- saturated: 32 producers enqueue back to back (closed loop): the most
  deliveries per second, with latency set by the queue's own depth;
- paced: deliveries arrive at a fixed rate (default 1,000/s, the issue's
  target), at most 32 in flight: the acknowledge latency the server adds;
- saturated with group commit off (`max_batch=1`, one fsync per delivery),
  for comparison.

Each prints deliveries/s, the median and 99th percentile latency of one
`enqueue`, and how many writes shared each commit.

    uv run python -m bench.queue [--deliveries 20000] [--concurrency 32] [--rate 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.jobs import JobKind, JobRequest, Thread, TriggerKind
from bot.queue import JobQueue, SqliteQueue


def request(delivery_id: str, n: int) -> JobRequest:
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository="octo/hello", number=n % 500),
        installation_id=42,
        event="issue_comment.created",
        trigger=TriggerKind("issue_comment.created"),
        trigger_id=n,
        author="alice",
        author_association="OWNER",
        instruction="@neo fix the flaky date test " + "x" * 400,
        dedupe_key=f"comment:{delivery_id}",
        delivery_id=delivery_id,
    )


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """Deliveries per second, and the p50 and p99 latency of one `enqueue` (seconds)."""

    rate: float
    p50: float
    p99: float

    def line(self, label: str) -> str:
        return (
            f"{label:<34} {self.rate:7.0f} deliveries/s"
            f"  p50 {self.p50 * 1000:6.2f} ms  p99 {self.p99 * 1000:6.2f} ms"
        )


async def acknowledged(
    queue: JobQueue, deliveries: int, concurrency: int, rate: float | None, *, prefix: str = ""
) -> Acknowledged:
    """Enqueue `deliveries`, at most `concurrency` at once, back to back or at `rate`/s."""
    latencies: list[float] = []
    slots = asyncio.Semaphore(concurrency)

    async def deliver(n: int) -> None:
        async with slots:
            delivery_id = f"{prefix}delivery-{n}"
            started = time.perf_counter()
            await queue.enqueue(delivery_id, [request(delivery_id, n)])
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    if rate is None:
        await asyncio.gather(*(deliver(n) for n in range(deliveries)))
    else:
        tasks = []
        for n in range(deliveries):
            # Arrivals on a fixed schedule, whether or not earlier ones are done.
            delay = started + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(deliver(n)))
        await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    return Acknowledged(deliveries / elapsed, cuts[49], cuts[98])


async def run(
    path: Path, label: str, deliveries: int, concurrency: int, max_batch: int, rate: float | None
) -> None:
    async with SqliteQueue(path, max_batch=max_batch) as queue:
        figures = await acknowledged(queue, deliveries, concurrency, rate)
        stats = queue.stats
    print(f"{figures.line(label)}  {stats.writes / stats.commits:5.1f} writes/commit")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=float, default=1000.0, help="arrivals/s of the paced run")
    parser.add_argument("--dir", type=Path, help="where the databases go (default: a temp dir)")
    args = parser.parse_args()
    runs = [
        (f"saturated, concurrency {args.concurrency}", args.deliveries, 1024, None),
        (f"paced at {args.rate:.0f}/s", args.deliveries // 2, 1024, args.rate),
        # One fsync per delivery: fewer of them.
        ("saturated, no group commit", min(args.deliveries, 2_000), 1, None),
    ]
    for label, deliveries, max_batch, rate in runs:
        with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
            path = Path(scratch) / "neo.db"
            asyncio.run(run(path, label, deliveries, args.concurrency, max_batch, rate))


if __name__ == "__main__":
    main()
