"""The run pages served for a browser: a uvicorn server on a thread of its own,
its queue opened on that thread's loop, and a way for a test to act on the queue
there (queue a job, append a scripted job's records, end it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import uvicorn
from starlette.applications import Starlette

from bot.queue import JobQueue, open_queue
from bot.runs.feeds import Feeds
from bot.runs.pages import Door, Site, run_routes
from tests.bot.serving import free_port

T = TypeVar("T")


@dataclass
class Live:
    url: str
    queue: JobQueue
    loop: asyncio.AbstractEventLoop

    def run(self, make: Callable[[JobQueue], Awaitable[T]], timeout: float = 30) -> T:
        """Run `make(queue)` on the server's loop and return what it gives."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(_awaited(make(self.queue)), self.loop)
        return future.result(timeout)


async def _awaited(value: Awaitable[T]) -> T:
    return await value


@contextmanager
def serving(
    queue_url: str,
    door: Callable[[JobQueue], Door],
    web_url: str = "https://github.example",
) -> Iterator[Live]:
    """The pages of the queue at `queue_url` on a loopback port, until the block ends."""
    port = free_port()
    loop = asyncio.new_event_loop()
    ready: Future[tuple[JobQueue, uvicorn.Server]] = Future()
    stop = threading.Event()

    async def main() -> None:
        queue = open_queue(queue_url, listen=False)
        closing = asyncio.Event()
        feeds = Feeds(queue)
        site = Site(queue, door(queue), web_url, closing, feeds)
        app = Starlette(routes=run_routes(lambda _: site))
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
        )
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        ready.set_result((queue, server))
        await asyncio.to_thread(stop.wait)
        closing.set()
        server.should_exit = True
        await task
        await feeds.close()
        await queue.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    queue, _ = ready.result(30)
    try:
        yield Live(f"http://127.0.0.1:{port}", queue, loop)
    finally:
        stop.set()
        thread.join(30)
        loop.close()
