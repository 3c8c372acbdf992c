"""The workers of one process: signed in as the App, sharing one mirror cache.

`neo worker` runs them alone; `neo serve` runs them beside the intake when
NEO_WORKERS > 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket

from bot.config.settings import Settings
from bot.github.app import signed_in_app
from bot.queue import JobQueue
from bot.worker.budgets import operator_budgets
from bot.worker.loop import Worker, WorkerDeps, WorkerOptions
from runner.git import MirrorCache
from runner.sandbox.ownership import give_ahead
from runner.text import one_line

__all__ = ["run_workers", "sweep_sandbox_orphans"]

log = logging.getLogger("neo.worker")


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
    trees make the next clone of a repository a rename and a small checkout;
    with the docker sandbox, a spare is its user's as it is made, so that a
    job's tree changes hands only where its checkout wrote.

    Raises ConfigError (one line) when the App's credentials do not work.
    """
    async with (
        signed_in_app(settings) as (app, login),
        MirrorCache(
            settings.data_dir / "mirrors",
            spare_ready=give_ahead if settings.sandbox == "docker" else None,
        ) as mirrors,
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
                    "job_timeout": settings.job_timeout,
                }
            )
        )
        worker = Worker(
            WorkerDeps(
                queue=queue,
                app=app,
                settings=settings,
                wakeup=wakeup,
                mirrors=mirrors,
                budgets=operator_budgets(settings),
            ),
            WorkerOptions(
                name=name,
                concurrency=concurrency,
                grace=grace,
                # Beats every lease/4, looks for expired leases every lease/2.
                lease=float(settings.worker_lease),
                job_timeout=float(settings.job_timeout),
            ),
        )
        await worker.run(stop)
        log.info(json.dumps({"event": "workers_stopped", "worker": name}))


def sweep_sandbox_orphans() -> None:
    """Remove sandbox containers, and their egress proxies and volumes, left
    over from a crash, when docker answers: a worker that restarts cleans up
    what its dead predecessor left, whether or not a job comes."""
    from runner.network.proxy import sweep_egress
    from runner.sandbox.docker import docker_client, sweep_orphans
    from runner.sandbox.factory import MAX_JOB_SECONDS

    try:
        client = docker_client()
        # Sandboxes first: a proxy's volume goes once no sandbox mounts it.
        removed = sweep_orphans(client, max_age=MAX_JOB_SECONDS)
        removed += sweep_egress(client, max_age=MAX_JOB_SECONDS)
        client.close()
    except Exception as error:  # the intake works without docker
        log.warning(json.dumps({"event": "sweep_skipped", "reason": one_line(error)}))
        return
    if removed:
        log.info(json.dumps({"event": "swept_orphans", "containers": removed}))
