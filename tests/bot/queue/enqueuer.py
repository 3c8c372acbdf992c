"""Enqueue deliveries forever, printing each id once `enqueue` has returned.

The durability tests run this, kill it with SIGKILL at a random moment and
check that every printed id is in the queue:

    python -m tests.bot.queue.enqueuer DB_PATH|QUEUE_URL PREFIX
"""

from __future__ import annotations

import asyncio
import sys
from itertools import count
from pathlib import Path

from bot.queue import JobQueue, SqliteQueue, is_postgres_url, open_queue
from tests.bot.queue.factories import make_request

CONCURRENCY = 32


async def produce(queue: JobQueue, prefix: str, lane: int) -> None:
    for n in count():
        delivery_id = f"{prefix}-{lane}-{n}"
        await queue.enqueue(delivery_id, [make_request(delivery_id)])
        # Acknowledged: only now may anyone hear about it.
        sys.stdout.write(delivery_id + "\n")
        sys.stdout.flush()


async def main(where: str, prefix: str) -> None:
    queue = open_queue(where) if is_postgres_url(where) else SqliteQueue(Path(where))
    await asyncio.gather(*(produce(queue, prefix, lane) for lane in range(CONCURRENCY)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
