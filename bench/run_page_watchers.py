"""`bench.run_page watchers`: what 100 watchers of one run cost a real `neo serve`.

`neo serve` (NEO_WORKERS=0, SQLite queue, a fake GitHub where the repository is
public) serves a job that a writer process feeds one turn's records every
100 ms, as a worker on the same host would. Measured over `--seconds` each,
first without watchers, then with `--watchers` SSE connections to the job's
stream (held by a client process of their own): the server's RSS and CPU, and
bench.webhooks' delivery rate and acknowledge latency against the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench.webhooks import Plan, _client_process, _cpu_seconds, _status
from bot.queue import open_queue, sqlite_url
from tests.bot.queue.factories import make_request
from tests.bot.serving import neo_serve, serve_env
from tests.fakes import FakeGitHub

REPOSITORY = "octo/public"

# The writer: a turn's records every 100 ms until stopped.
_WRITER = """
import asyncio, signal, sys, time
from bot.queue import open_queue
from tests.bot.runs.scripted import turn

async def main(url, job):
    queue = open_queue(url, listen=False)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    number = 0
    while not stop.is_set():
        number += 1
        await queue.append_events(job, [(time.time(), k, d) for k, d in turn(number)])
        await asyncio.sleep(0.1)
    await queue.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""

# The watchers: N streams of the job's events until stopped; prints records per watcher.
_WATCHERS = """
import asyncio, json, signal, sys
import httpx

async def watch(client, url, counts, index):
    async with client.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                counts[index] += 1

async def main(url, n):
    counts = [0] * n
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    limits = httpx.Limits(max_connections=n + 10)
    async with httpx.AsyncClient(timeout=None, limits=limits) as client:
        tasks = [asyncio.create_task(watch(client, url, counts, i)) for i in range(n)]
        print("open", flush=True)
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(counts), flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def _running_job(url: str) -> int:
    queue = open_queue(url, listen=False)
    try:
        delivery = str(uuid.uuid4())
        result = await queue.enqueue(delivery, [make_request(delivery, repository=REPOSITORY)])
        (job_id,) = result.job_ids
        job = await queue.claim("bench-worker", 3600)
        assert job is not None
        assert job.id == job_id
        return job_id
    finally:
        await queue.close()


def _window(pid: int, seconds: float) -> tuple[int, float]:
    """The server's RSS at the end of `seconds`, and its CPU (share of a core) over them."""
    before, started = _cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return _status(pid, "VmRSS"), (_cpu_seconds(pid) - before) / (time.perf_counter() - started)


def _intake(url: str, seconds: float) -> tuple[float, float, float]:
    tally = _client_process(Plan(url, "raw", 32, seconds, 2.0, 0.2, 1))
    cuts = statistics.quantiles(sorted(tally.latencies), n=100)
    return len(tally.latencies) / seconds, cuts[49] * 1000, cuts[98] * 1000


def watchers(args: argparse.Namespace) -> None:
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        github = stack.enter_context(FakeGitHub(slug="neo"))
        github.install(42, "octo", ["public"])  # make_request's installation
        github.set_public(REPOSITORY)
        env = serve_env(github, scratch / "data")
        server = stack.enter_context(neo_serve(env, scratch / "serve.log"))
        queue_url = sqlite_url(scratch / "data" / "neo.db")
        job = asyncio.run(_running_job(queue_url))
        page = httpx.get(f"{server.url}/runs/{job}", timeout=10).status_code
        assert page == 200, f"GET /runs/{job} answered {page}"
        writer = subprocess.Popen([sys.executable, "-c", _WRITER, queue_url, str(job)])
        stack.callback(_stop, writer)
        pid = server.process.pid
        time.sleep(1)
        idle_rss, idle_cpu = _window(pid, args.seconds)
        rate, p50, p99 = _intake(server.url, args.seconds)
        # What the intake's load left grown is no watcher's: the baseline is after it.
        idle_rss = _status(pid, "VmRSS")
        clients = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WATCHERS,
                f"{server.url}/runs/{job}/events",
                str(args.watchers),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert clients.stdout is not None
        clients.stdout.readline()
        time.sleep(2)  # every stream open and caught up
        watched_rss, watched_cpu = _window(pid, args.seconds)
        watched_rate, watched_p50, watched_p99 = _intake(server.url, args.seconds)
        clients.send_signal(signal.SIGTERM)
        counts = json.loads(clients.stdout.readline())
        clients.wait(30)
    mb = 1024 * 1024
    print(f"neo serve, one run written at 10 flushes/s, {args.seconds:.0f} s windows:")
    print(
        f"  no watchers      RSS {idle_rss / mb:.1f} MB, CPU {idle_cpu:.0%} of a core;"
        f" webhooks {rate:.0f}/s, ack p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    print(
        f"  {args.watchers} watchers     RSS {watched_rss / mb:.1f} MB"
        f" (+{(watched_rss - idle_rss) / mb:.1f} MB), CPU {watched_cpu:.0%} of a core"
        f" (+{watched_cpu - idle_cpu:.0%}); webhooks {watched_rate:.0f}/s,"
        f" ack p50 {watched_p50:.1f} ms, p99 {watched_p99:.1f} ms"
    )
    print(f"  records per watcher: min {min(counts)}, max {max(counts)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
