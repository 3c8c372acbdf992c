"""`neo worker`: workers only, over the same queue as `neo serve` (scale-out)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from bot.cli.argtypes import positive_int, seconds
from bot.config.settings import Settings, ensure_data_dir, load_settings
from bot.exits import EXIT_OK, EXIT_USAGE
from bot.logs import log_to_stderr
from runner.errors import ConfigError

__all__ = ["DEFAULT_CONCURRENCY", "add_worker_parser", "worker_command"]

# `neo worker` without NEO_WORKERS or --concurrency.
DEFAULT_CONCURRENCY = 2


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="run queued jobs (no webhook server)",
        description=(
            "Take jobs from the queue (NEO_QUEUE_URL) and run them until SIGTERM; "
            "running jobs get a grace period, then go back to the queue. Settings "
            "come from NEO_* variables (see docs/github-app.md)."
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
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long running jobs may take to finish after SIGTERM (default: 30)",
    )


def worker_command(args: argparse.Namespace) -> int:
    log_to_stderr()
    try:
        settings = load_settings()
        ensure_data_dir(settings)
        concurrency = args.concurrency or settings.workers or DEFAULT_CONCURRENCY
        asyncio.run(_main(settings, concurrency, args.grace))
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK


async def _main(settings: Settings, concurrency: int, grace: float) -> None:
    # The workers, the queue's drivers and the sandboxes load only once the
    # settings are good: a bad one is reported before their second or more of CPU.
    from bot.queue import open_queue, wakeup_of
    from bot.worker.pool import run_workers, sweep_sandbox_orphans
    from runner.sandbox.factory import check_local_sandbox

    if settings.sandbox == "docker":
        await asyncio.to_thread(sweep_sandbox_orphans)
    else:
        await check_local_sandbox("NEO_SANDBOX=docker")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    queue = open_queue(
        settings.queue, job_timeout=settings.job_timeout, max_run_events=settings.run_max_events
    )
    try:
        # A PostgreSQL queue's LISTEN wakes these workers for any host's job.
        await run_workers(
            settings, queue, stop, concurrency=concurrency, grace=grace, wakeup=wakeup_of(queue)
        )
    finally:
        await queue.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
