"""`neo worker`: workers only, over the same queue as `neo serve` (scale-out).

`run_workers` is also what `neo serve` starts in-process when NEO_WORKERS > 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys
from typing import Any

from bot.argtypes import positive_int
from bot.github import signed_in_app
from bot.queue import JobQueue, open_queue
from bot.settings import Settings, ensure_data_dir, load_settings
from bot.worker import Worker
from runner.errors import ConfigError
from runner.git import MirrorCache

__all__ = ["DEFAULT_CONCURRENCY", "add_worker_parser", "run_workers", "worker_command"]

log = logging.getLogger("neo.worker")

# `neo worker` without NEO_WORKERS or --concurrency.
DEFAULT_CONCURRENCY = 2


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="run queued jobs (no webhook server)",
        description=(
            "Take jobs from the queue (NEO_QUEUE_URL) and run them until SIGTERM; "
            "running jobs get a grace period, then go back to the queue. Settings "
            "come from NEO_* variables (see the README)."
        ),
    )
    worker.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help=f"jobs at once (default: NEO_WORKERS, else {DEFAULT_CONCURRENCY})",
    )
    worker.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long running jobs may take to finish after SIGTERM (default: 30)",
    )


def worker_command(args: argparse.Namespace) -> int:
    from bot.serve_cli import _log_to_stderr

    _log_to_stderr()
    try:
        settings = load_settings()
        ensure_data_dir(settings)
        concurrency = args.concurrency or settings.workers or DEFAULT_CONCURRENCY
        asyncio.run(_main(settings, concurrency, args.grace))
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


async def _main(settings: Settings, concurrency: int, grace: float) -> None:
    from bot.serve_cli import sweep_sandbox_orphans

    if settings.sandbox == "docker":
        await asyncio.to_thread(sweep_sandbox_orphans)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    queue = open_queue(settings.queue)
    try:
        await run_workers(settings, queue, stop, concurrency=concurrency, grace=grace)
    finally:
        await queue.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def run_workers(
    settings: Settings,
    queue: JobQueue,
    stop: asyncio.Event,
    *,
    concurrency: int,
    grace: float = 30.0,
    wakeup: asyncio.Event | None = None,
) -> None:
    """Run up to `concurrency` jobs of `queue` at once until `stop`, then drain.

    `wakeup`, set when this process queues a job, makes the workers claim it
    at once (`neo serve`); without it they poll the queue every second. The
    workers share one mirror cache for the life of the process, whose spare
    trees make the next clone of a repository a rename and a small checkout.

    Raises ConfigError (one line) when the App's credentials do not work.
    """
    async with (
        signed_in_app(settings) as (app, login),
        MirrorCache(settings.data_dir / "mirrors") as mirrors,
    ):
        name = f"{socket.gethostname()}:{os.getpid()}"
        log.info(
            json.dumps(
                {
                    "event": "workers_started",
                    "worker": name,
                    "app": login,
                    "jobs": concurrency,
                    "lease": settings.worker_lease,
                }
            )
        )
        worker = Worker(
            queue,
            app,
            settings,
            name=name,
            concurrency=concurrency,
            grace=grace,
            # Beats every lease/4, looks for expired leases every lease/2.
            lease=float(settings.worker_lease),
            wakeup=wakeup,
            mirrors=mirrors,
        )
        await worker.run(stop)
        log.info(json.dumps({"event": "workers_stopped", "worker": name}))
