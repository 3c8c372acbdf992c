"""`neo serve`: the webhook server, the scheduler and, with NEO_WORKERS > 0, in-process workers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
import uvloop

from bot.argtypes import port
from bot.http_limits import BoundedHttpToolsProtocol
from bot.queue import WakingQueue
from bot.scheduler import run_scheduler
from bot.server import Intake, create_app, serve_intake
from bot.settings import Settings, ensure_data_dir, load_settings
from bot.worker_cli import run_workers
from runner.errors import ConfigError

log = logging.getLogger("neo.server")

_GC_YOUNG = 50_000


def add_serve_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="receive GitHub webhooks and queue the work they ask for",
        description=(
            "Serve POST /api/github/webhooks, GET /healthz and GET /metrics. "
            "Settings come from NEO_* variables (see the README)."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=port, default=8000, help="port to listen on (default: 8000)")


def serve_command(args: argparse.Namespace) -> int:
    _log_to_stderr()
    try:
        settings = load_settings()
        ensure_data_dir(settings)
        # uvloop: the event loop's own work (socket reads and writes, wake-ups
        # from the queue's writer thread) costs a fraction of asyncio's.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_serve(settings, args.host, args.port))
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


async def _serve(settings: Settings, host: str, port: int) -> None:
    if settings.sandbox == "docker":
        await asyncio.to_thread(sweep_sandbox_orphans)
    # The intake opens before the server listens: bad credentials or an
    # unusable queue stop start-up with one line instead of a traceback.
    async with asynccontextmanager(serve_intake(settings))() as opened:
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
            host=host,
            port=port,
            access_log=False,
            log_config=None,
            server_header=False,
            # httptools parses HTTP in C (uvicorn's default, h11, is pure
            # Python); this protocol bounds a request head's time and size.
            http=BoundedHttpToolsProtocol,
            # No limit_concurrency: over it uvicorn answers every request 503,
            # so a client holding connections open would turn real deliveries
            # away. The deadlines on heads and bodies bound how long any
            # connection is held instead.
        )
        server = uvicorn.Server(config)
        stop = asyncio.Event()

        def ended(task: asyncio.Task[None]) -> None:
            if not stop.is_set():  # it failed on its own: the service is not whole
                server.should_exit = True

        # The scheduler queues what repositories' schedules ask for. It holds
        # nothing a shutdown must wait for (a slot queued twice is one job),
        # so it is cancelled, not drained.
        scheduler = asyncio.create_task(run_scheduler(settings, intake.queue))
        scheduler.add_done_callback(ended)
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
            await server.serve()
        finally:
            stop.set()
            scheduler.cancel()
            try:
                if workers is not None:
                    await workers
            finally:
                with contextlib.suppress(asyncio.CancelledError):
                    await scheduler


def sweep_sandbox_orphans() -> None:
    """Remove sandbox containers left over from a crash, when docker answers."""
    from runner.sandbox.docker import docker_client, sweep_orphans
    from runner.sandbox.factory import MAX_JOB_SECONDS

    try:
        client = docker_client()
        removed = sweep_orphans(client, max_age=MAX_JOB_SECONDS)
        client.close()
    except Exception as error:  # the intake works without docker
        log.warning(json.dumps({"event": "sweep_skipped", "reason": str(error).splitlines()[0]}))
        return
    if removed:
        log.info(json.dumps({"event": "swept_orphans", "containers": removed}))


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for name in ("neo", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
