"""`neo serve`'s process: the webhook intake, the scheduler and in-process workers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import uvicorn

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.intake.http_limits import with_head_deadline
from bot.intake.listen import listening_socket
from bot.intake.scheduler import run_scheduler
from bot.intake.server import Intake, create_app, serve_intake
from bot.queue import JobQueue, WakingQueue
from bot.runs.retention import prune_runs
from bot.runs.serving import open_site
from bot.runs.site import RunSite
from bot.worker.config import ConfigResolver, ConfigSource
from bot.worker.pool import run_workers, sweep_sandbox_orphans
from bot.worker.writers import ConfiguredWriters
from runner.sandbox.factory import check_local_sandbox

log = logging.getLogger("neo.server")

_GC_YOUNG = 50_000

__all__ = ["serve", "serve_on"]


async def serve(settings: Settings, host: str, port: int) -> None:
    """Serve webhooks on `host`:`port` with the scheduler and workers until told to stop."""
    with listening_socket(host, port) as sock:
        await serve_on(settings, sock)


async def serve_on(settings: Settings, sock: socket.socket) -> None:
    """Serve webhooks on `sock`, bound by bot.intake.listen.listening_socket, until told to stop."""
    if settings.sandbox == "docker":
        await asyncio.to_thread(sweep_sandbox_orphans)
    elif settings.workers:
        await check_local_sandbox("NEO_SANDBOX=docker")
    # Set as the server begins to shut down: the run pages' live streams end.
    closing = asyncio.Event()
    # The intake opens before the server listens: bad credentials or an
    # unusable queue stop start-up with one line instead of a traceback.
    async with asynccontextmanager(serve_intake(settings, _runs(settings, closing)))() as opened:
        # A job queued here wakes the in-process workers at once: no poll to wait for.
        queue = WakingQueue(opened.queue)
        intake = dataclasses.replace(opened, queue=queue)

        async def open_intake() -> AsyncIterator[Intake]:
            yield intake

        # What is loaded by now (githubkit's models above all) lives as long
        # as the process: keep it out of the cyclic GC's full collections,
        # which otherwise stall every request in flight for tens of ms.
        gc.freeze()
        # Each delivery allocates hundreds of short-lived containers (its
        # payload above all), so the default threshold of 700 ran a young
        # collection every other delivery, over everything in flight; at
        # 50,000 it runs every hundred or so: about 8% more deliveries/s.
        gc.set_threshold(_GC_YOUNG, *gc.get_threshold()[1:])
        config = uvicorn.Config(
            create_app(open_intake),
            access_log=False,
            log_config=None,
            server_header=False,
            # httptools parses HTTP in C (uvicorn's default, h11, is pure
            # Python); this protocol bounds a request head's time and size.
            http=with_head_deadline(settings.head_timeout),
            # No limit_concurrency: over it uvicorn answers every request 503,
            # so a client holding connections open would turn real deliveries
            # away. The deadlines on heads and bodies bound how long any
            # connection is held instead.
        )
        server = _Server(config, closing)
        stop = asyncio.Event()

        def ended(task: asyncio.Task[None]) -> None:
            if not stop.is_set():  # it failed on its own: the service is not whole
                server.should_exit = True

        # The scheduler queues what repositories' schedules ask for. It holds
        # nothing a shutdown must wait for (a slot queued twice is one job),
        # so it is cancelled, not drained.
        scheduler = asyncio.create_task(run_scheduler(settings, intake.queue))
        scheduler.add_done_callback(ended)
        # Runs' event logs past NEO_RUN_RETENTION_DAYS go, every hour.
        pruner = asyncio.create_task(
            prune_runs(queue, settings.run_retention_days, clock=time.time)
        )
        workers: asyncio.Task[None] | None = None
        if settings.workers:
            # In-process workers share the intake's queue; they stop taking work
            # when the server shuts down and drain before the queue closes.
            workers = asyncio.create_task(
                run_workers(
                    settings,
                    queue,
                    stop,
                    concurrency=settings.workers,
                    wakeup=queue.queued,
                )
            )
            workers.add_done_callback(ended)
        try:
            await server.serve(sockets=[sock])
        finally:
            stop.set()
            scheduler.cancel()
            pruner.cancel()
            try:
                if workers is not None:
                    await workers
            finally:
                with contextlib.suppress(asyncio.CancelledError):
                    await scheduler
                with contextlib.suppress(asyncio.CancelledError):
                    await pruner


class _Server(uvicorn.Server):
    """uvicorn's server, which says when it begins to shut down: it then waits for
    every response to end, and a run page's live stream ends only when told."""

    def __init__(self, config: uvicorn.Config, closing: asyncio.Event) -> None:
        super().__init__(config)
        self._closing = closing

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._closing.set()
        await super().shutdown(sockets)


def _runs(
    settings: Settings, closing: asyncio.Event
) -> Callable[[GitHubApp, JobQueue], AbstractAsyncContextManager[RunSite]]:
    """The run pages' site: who may stop or steer is the workers' rule, read as they read it."""

    def open_runs(app: GitHubApp, queue: JobQueue) -> AbstractAsyncContextManager[RunSite]:
        config = ConfigResolver(app, ConfigSource(), time.monotonic, operator=settings.mcp_operator)
        return open_site(settings, app, ConfiguredWriters(app, config), queue, closing)

    return open_runs
