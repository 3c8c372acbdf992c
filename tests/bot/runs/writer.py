"""A worker's writes to a job's log from a process of its own, as a worker on another host
makes them: `python -m tests.bot.runs.writer QUEUE_URL JOB TURNS`, one flush per turn,
then the job's final state; prints the last seq."""

from __future__ import annotations

import asyncio
import sys
import time

from bot.queue import open_queue
from tests.bot.runs.scripted import turn


async def main(url: str, job: int, turns: int) -> None:
    queue = open_queue(url, listen=False)
    try:
        last = 0
        for number in range(1, turns + 1):
            last = await queue.append_events(job, [(time.time(), k, d) for k, d in turn(number)])
            await asyncio.sleep(0.1)
        last = await queue.append_events(
            job, [(time.time(), "state", {"state": "finished", "conclusion": "success"})]
        )
    finally:
        await queue.close()
    print(last)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
