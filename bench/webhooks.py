"""Webhook intake throughput, acknowledge latency and memory of a real `neo serve`.

Starts `neo serve` as a subprocess on loopback (a fake GitHub gives it the
App's identity; its data dir, and so its durable SQLite queue, is in a temp
dir), measures its idle RSS, then sends signed deliveries from `--concurrency`
keep-alive connections for `--seconds`: mostly `issue_comment` mentions of
@neo, each a new comment and delivery id, so each commits one job before it
is answered; the rest events Neo ignores (202, nothing queued). Prints:

- deliveries/s sustained over the measured window (after a warm-up);
- p50/p99 acknowledge latency as the client saw it (send to full answer) and
  as the server's own histogram saw it;
- RSS idle and loaded (VmRSS at the end of the load, and the peak, VmHWM);
- the server's delivery counters by decision, checked against what was sent,
  and its queue depth;
- CPU the server (its event loop's thread and the others: the queue's
  writer) and the client used, to show which one was busy.

The client is raw asyncio HTTP/1.1 over keep-alive connections (`--client
raw`, the default): requests signed as they are drawn, parsing only the
status line and Content-Length of the answer. It uses about a fifth of a
core at the server's pace. httpx.AsyncClient (`--client httpx`, for
comparison) needs a whole core for a few hundred requests a second, so it
measures itself, not the server. `--processes N` splits the connections
over N client processes.

What bounds the figures (2 cores, 14.5 KB mention payloads): the server's
event loop, one thread. It spends most of each delivery in `json.loads` of
the payload, triage's validation, the enqueue (the same payloads from a bot
sender, ignored before the queue, go about twice as fast) and the HTTP
framework; see the closing note of the issue for the measurements.

    uv run python -m bench.webhooks [--seconds 15] [--concurrency 32]
        [--client raw|httpx] [--processes 1] [--ignored 0.2] [--queue sqlite|postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import multiprocessing
import os
import random
import re
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.postgres_queue import fresh_database
from bot.intake.server import WEBHOOK_PATH
from tests.bot.serving import corpus, neo_serve, serve_env, sign
from tests.fakes import FakeGitHub
from tests.postgres import cluster

# A comment id no corpus payload uses, replaced by each delivery's own.
_ID_MARK = 987654321987
# Events Neo answers 202 without queueing: a push, a star, a PR opened, a CI run.
_IGNORED = ("push", "star", "pull_request", "check_run", "workflow_run")


# --- what is sent ----------------------------------------------------------------


def _mention_template() -> tuple[bytes, bytes]:
    """The JSON body of a real issue_comment.created mentioning @neo, split at its comment id."""
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created" and "installation" in p
    )
    payload["comment"]["id"] = _ID_MARK
    payload["comment"]["body"] = "@neo please fix the flaky date test"
    payload["comment"]["user"]["type"] = "User"
    payload["sender"]["type"] = "User"
    payload["issue"]["locked"] = False
    body = json.dumps(payload).encode()
    before, mark, after = body.partition(str(_ID_MARK).encode())
    assert mark, "the comment id is in the body"
    assert str(_ID_MARK).encode() not in after, "and only once"
    return before, after


def _ignored_bodies() -> list[tuple[str, bytes, str]]:
    """(event, body, signature) of real payloads of events Neo ignores."""
    chosen: dict[str, bytes] = {}
    for name, payload in corpus():
        if name in _IGNORED and name not in chosen:
            chosen[name] = json.dumps(payload).encode()
    return [(name, body, sign(body)) for name, body in chosen.items()]


class Deliveries:
    """An endless stream of signed deliveries; a mention is signed when it is drawn."""

    def __init__(self, ignored_share: float, seed: int) -> None:
        self._before, self._after = _mention_template()
        self._ignored = _ignored_bodies()
        self._share = ignored_share
        self._random = random.Random(seed)
        # Comment ids unique across client processes: each starts its own range.
        self._next_id = 10_000_000 + seed * 100_000_000

    def next(self) -> tuple[str, bytes, str]:
        """(event, body, signature)."""
        if self._random.random() < self._share:
            return self._random.choice(self._ignored)
        self._next_id += 1
        body = self._before + str(self._next_id).encode() + self._after
        return "issue_comment", body, sign(body)


def _request_bytes(host: str, event: str, body: bytes, signature: str) -> bytes:
    head = (
        f"POST {WEBHOOK_PATH} HTTP/1.1\r\n"
        f"host: {host}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        f"x-github-event: {event}\r\n"
        f"x-github-delivery: {uuid.uuid4()}\r\n"
        f"x-hub-signature-256: {signature}\r\n"
        "user-agent: GitHub-Hookshot/bench\r\n"
        "\r\n"
    )
    return head.encode() + body


# --- the clients -----------------------------------------------------------------


@dataclass
class Tally:
    """What one client process saw in the measured window, and around it."""

    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    sent: int = 0  # every answered request, warm-up included
    errors: int = 0
    cpu_seconds: float = 0.0


Send = Callable[[str, bytes, str], Awaitable[int]]


async def _raw_connection(host: str, port: int) -> tuple[Send, asyncio.StreamWriter]:
    """One keep-alive HTTP/1.1 connection: a call of `send` sends one request and
    reads its answer; close the writer when done."""
    reader, writer = await asyncio.open_connection(host, port)
    length = re.compile(rb"\r\ncontent-length: *(\d+)", re.IGNORECASE)

    async def send(event: str, body: bytes, signature: str) -> int:
        writer.write(_request_bytes(f"{host}:{port}", event, body, signature))
        head = await reader.readuntil(b"\r\n\r\n")
        found = length.search(head)
        if found is None:
            raise RuntimeError("an answer without Content-Length")
        await reader.readexactly(int(found.group(1)))
        return int(head[9:12])

    return send, writer


@dataclass(frozen=True, slots=True)
class Plan:
    """One client process's share of the load."""

    url: str
    client: str  # "raw" or "httpx"
    connections: int
    seconds: float
    warmup: float
    ignored: float
    seed: int


async def _load(plan: Plan) -> Tally:
    tally = Tally()
    deliveries = Deliveries(plan.ignored, plan.seed)
    started = time.perf_counter()
    measure_from = started + plan.warmup
    stop_at = measure_from + plan.seconds
    host, port = plan.url.removeprefix("http://").split(":")
    pool = httpx.AsyncClient(
        base_url=plan.url,
        limits=httpx.Limits(
            max_connections=plan.connections, max_keepalive_connections=plan.connections
        ),
        timeout=30,
    )

    async def worker() -> None:
        connection: asyncio.StreamWriter | None = None
        if plan.client == "raw":
            send, connection = await _raw_connection(host, int(port))
        else:

            async def send(event: str, body: bytes, signature: str) -> int:
                answer = await pool.post(
                    WEBHOOK_PATH,
                    content=body,
                    headers={
                        "content-type": "application/json",
                        "x-github-event": event,
                        "x-github-delivery": str(uuid.uuid4()),
                        "x-hub-signature-256": signature,
                    },
                )
                return answer.status_code

        try:
            while (now := time.perf_counter()) < stop_at:
                event, body, signature = deliveries.next()
                try:
                    status = await send(event, body, signature)
                except (OSError, httpx.HTTPError, asyncio.IncompleteReadError):
                    tally.errors += 1
                    return
                done = time.perf_counter()
                tally.sent += 1
                if now >= measure_from:
                    tally.latencies.append(done - now)
                    tally.statuses[status] += 1
        finally:
            if connection is not None:
                connection.close()

    cpu = time.process_time()
    async with pool:
        await asyncio.gather(*(worker() for _ in range(plan.connections)))
    tally.cpu_seconds = time.process_time() - cpu
    return tally


def _client_process(plan: Plan) -> Tally:
    return asyncio.run(_load(plan))


# --- the server's side -----------------------------------------------------------


def _status(pid: int, field_name: str) -> int:
    """A /proc/<pid>/status size in bytes, e.g. VmRSS."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field_name)


def _cpu_seconds(pid: int) -> float:
    user, system = _cpu_split(Path(f"/proc/{pid}/stat"))
    return user + system


def _cpu_split(stat: Path) -> tuple[float, float]:
    """(user, system) CPU seconds from a /proc stat file."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _threads_cpu(pid: int) -> dict[str, tuple[float, float]]:
    """(user, system) CPU seconds of the event loop's thread and of all the others."""
    loop, others = (0.0, 0.0), (0.0, 0.0)
    for task in Path(f"/proc/{pid}/task").iterdir():
        user, system = _cpu_split(task / "stat")
        if task.name == str(pid):
            loop = (user, system)
        else:
            others = (others[0] + user, others[1] + system)
    return {"event loop": loop, "other threads": others}


def _metric_lines(text: str, name: str) -> dict[str, float]:
    """{labels: value} of one series family in Prometheus text."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, value = line.rsplit(" ", 1)
            values[key[len(name) :]] = float(value)
    return values


def _histogram_quantile(buckets: dict[str, float], q: float) -> float:
    """The upper bound of the bucket holding quantile `q` (Prometheus-style, no interpolation)."""
    bounds = sorted(
        (float(re.search(r'le="([^"]+)"', key).group(1)), count)  # type: ignore[union-attr]
        for key, count in buckets.items()
    )
    total = bounds[-1][1]
    for bound, count in bounds:
        if count >= q * total:
            return bound
    return float("inf")


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.0f} MB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# --- the run ---------------------------------------------------------------------


def run(args: argparse.Namespace) -> None:
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        github = stack.enter_context(FakeGitHub(slug="neo"))
        env = serve_env(github, Path(scratch) / "data")
        if args.queue == "postgres":
            # A local cluster with fsync on: every 2xx is a committed, durable job.
            server = stack.enter_context(cluster(durable=True))
            env["NEO_QUEUE_URL"] = stack.enter_context(fresh_database(server, "neo_webhooks"))
        print(f"queue: {args.queue}")
        measure(args, env, Path(scratch))


def measure(args: argparse.Namespace, env: dict[str, str], scratch: Path) -> None:
    """Load `neo serve` on `env` and print what it sustained."""
    with neo_serve(env, scratch / "serve.log") as server:
        pid = server.process.pid
        time.sleep(1)  # let start-up garbage settle
        idle = _status(pid, "VmRSS")
        cpu_before = _cpu_seconds(pid)
        threads_before = _threads_cpu(pid)
        share, remainder = divmod(args.concurrency, args.processes)
        split = [share + (1 if n < remainder else 0) for n in range(args.processes)]
        plans = [
            Plan(
                server.url,
                args.client,
                connections,
                args.seconds,
                args.warmup,
                args.ignored,
                seed,
            )
            for seed, connections in enumerate(split, start=1)
        ]
        started = time.perf_counter()
        if args.processes == 1:
            tallies = [_client_process(plans[0])]
        else:
            context = multiprocessing.get_context("spawn")
            with context.Pool(args.processes) as pool:
                tallies = pool.map(_client_process, plans)
        elapsed = time.perf_counter() - started
        server_cpu = _cpu_seconds(pid) - cpu_before
        threads = {
            name: (user - threads_before[name][0], system - threads_before[name][1])
            for name, (user, system) in _threads_cpu(pid).items()
        }
        loaded, peak = _status(pid, "VmRSS"), _status(pid, "VmHWM")
        metrics = httpx.get(f"{server.url}/metrics").text
        log_lines = server.log.read_text().count("\n")

    latencies = sorted(x for tally in tallies for x in tally.latencies)
    statuses = sum((tally.statuses for tally in tallies), Counter[int]())
    sent = sum(tally.sent for tally in tallies)
    errors = sum(tally.errors for tally in tallies)
    client_cpu = sum(tally.cpu_seconds for tally in tallies)
    cuts = statistics.quantiles(latencies, n=100)
    decisions = _metric_lines(metrics, "neo_webhook_deliveries_total")
    by_decision: Counter[str] = Counter()
    for labels, count in decisions.items():
        found = re.search(r'decision="([^"]+)"', labels)
        by_decision[found.group(1) if found else labels] += int(count)
    buckets = _metric_lines(metrics, "neo_webhook_ack_seconds_bucket")
    queued = _metric_lines(metrics, "neo_queue_jobs").get('{state="queued"}', 0.0)

    clients = f"{args.processes} process{'es' if args.processes > 1 else ''}"
    print(
        f"neo serve on {os.cpu_count()} cores, concurrency {args.concurrency},"
        f" {args.client} client in {clients}, {args.seconds:.0f} s measured"
        f" after {args.warmup:.0f} s warm-up, {args.ignored:.0%} ignored events"
    )
    print(f"  sustained      {len(latencies) / args.seconds:8.0f} deliveries/s")
    print(f"  ack latency    p50 {_ms(cuts[49])}  p99 {_ms(cuts[98])}  max {_ms(latencies[-1])}")
    print(
        f"  server's view  p50 <= {_ms(_histogram_quantile(buckets, 0.5))}"
        f"  p99 <= {_ms(_histogram_quantile(buckets, 0.99))} (histogram buckets)"
    )
    print(f"  RSS            idle {_mb(idle)}  loaded {_mb(loaded)}  peak {_mb(peak)}")
    print(f"  answers        {dict(sorted(statuses.items()))}, transport errors {errors}")
    print(
        f"  metrics        {sum(by_decision.values())} deliveries counted"
        f" ({dict(sorted(by_decision.items()))}) for {sent} sent;"
        f" queued jobs {queued:.0f}"
    )
    print(
        f"  CPU            server {server_cpu / elapsed:.0%} of a core,"
        f" client {client_cpu / elapsed:.0%} of a core; {log_lines} server log lines"
    )
    print(
        "  server CPU     "
        + ",  ".join(
            f"{name} {user / elapsed:.0%} user + {system / elapsed:.0%} system"
            for name, (user, system) in threads.items()
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="the measured window")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds sent before it")
    parser.add_argument("--concurrency", type=int, default=32, help="connections in flight")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw")
    parser.add_argument("--processes", type=int, default=1, help="client processes")
    parser.add_argument("--ignored", type=float, default=0.2, help="share of ignored events")
    parser.add_argument(
        "--queue", choices=("sqlite", "postgres"), default="sqlite", help="the queue's backend"
    )
    args = parser.parse_args()
    run(args)


if __name__ == "__main__":
    main()
