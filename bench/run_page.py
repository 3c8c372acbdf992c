"""The run page: how soon a record is visible in the browser, and what watchers cost.

`latency`: a scripted 200-turn job (each turn: its totals, a line of text, a
bash call and its result, flushed together as the worker flushes every
~100 ms) is written to the queue while Debian's chromium shows its page. The
page notes, at the animation frame after each record's element is added,
the wall clock; the writer notes it just before each append. Printed: p50 /
p99 / max of (visible - written) over the text and call records. Writers:

- `in-process`: the server's own queue object appends (neo serve with
  in-process workers): the append wakes the page's stream at once;
- `process`: another process appends to the same database (`neo worker`
  beside `neo serve` on SQLite: the stream's reader polls every 100 ms; on
  PostgreSQL, `--queue postgres`, LISTEN/NOTIFY wakes it).

`watchers`: 100 (`--watchers`) SSE connections to one running job's
stream on a real `neo serve` (NEO_WORKERS=0, its queue on SQLite), with a
writer process appending a turn every 100 ms. Printed: the server's RSS and
CPU without watchers and with them, the records each watcher got, and
bench.webhooks' intake rate and acknowledge latency without and with them.

    uv run python -m bench.run_page latency [--turns 200] [--writer in-process|process]
        [--queue sqlite|postgres]
    uv run python -m bench.run_page watchers [--watchers 100] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.postgres_queue import fresh_database
from tests.bot.runs.conftest import BROWSER_ARGS, CHROMIUM
from tests.bot.runs.doors import TableDoor
from tests.bot.runs.live import serving
from tests.bot.runs.scripted import append, end, start, turn
from tests.postgres import cluster

# Installed before the stream opens: when each record's element is added,
# the wall clock at the next animation frame (as near "visible" as a page knows).
_OBSERVE = """
window.__seen = {};
new MutationObserver((mutations) => {
  const added = [];
  for (const m of mutations) for (const n of m.addedNodes) {
    if (n.nodeType !== 1) continue;
    if (n.dataset && n.dataset.seq) added.push(n.dataset.seq);
    for (const e of n.querySelectorAll("[data-seq]")) added.push(e.dataset.seq);
  }
  if (added.length) requestAnimationFrame(() => {
    const now = Date.now();
    for (const s of added) if (!(s in window.__seen)) window.__seen[s] = now;
  });
}).observe(document.getElementById("transcript"), {childList: true, subtree: true});
"""

# The writer process: appends the scripted turns to a job, prints {seq: written at}.
_WRITER = """
import asyncio, json, sys, time
from bot.queue import open_queue
from tests.bot.runs.scripted import turn

async def main(url, job, turns, interval):
    queue = open_queue(url, listen=False)
    written = {}
    try:
        for number in range(1, turns + 1):
            records = turn(number)
            at = time.time()
            last = await queue.append_events(job, [(at, k, d) for k, d in records])
            for seq in range(last - len(records) + 1, last + 1):
                written[seq] = at
            await asyncio.sleep(interval)
    finally:
        await queue.close()
    print(json.dumps(written))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
"""

PUBLIC = "octo/public"


@contextmanager
def _queue_url(kind: str, scratch: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{scratch / 'neo.db'}"
        return
    with cluster(durable=True) as server, fresh_database(server, "run_page") as url:
        yield url


def latency(args: argparse.Namespace) -> None:
    door = TableDoor(public={PUBLIC})
    with (
        tempfile.TemporaryDirectory() as scratch,
        _queue_url(args.queue, Path(scratch)) as url,
        serving(url, lambda _: door) as live,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        page = browser.new_page()
        job = start(live, repository=PUBLIC)
        page.goto(f"{live.url}/runs/{job}")
        page.evaluate(_OBSERVE)
        page.wait_for_selector("[data-field=live]:has-text('Live')")
        written: dict[int, float] = {}
        if args.writer == "in-process":
            for number in range(1, args.turns + 1):
                records = turn(number)
                at = time.time()
                last = append(live, job, *records)
                for seq in range(last - len(records) + 1, last + 1):
                    written[seq] = at
                time.sleep(args.interval)
        else:
            done = subprocess.run(
                [sys.executable, "-c", _WRITER, url, str(job), str(args.turns), str(args.interval)],
                capture_output=True,
                text=True,
                check=True,
                timeout=args.turns * args.interval * 3 + 60,
            )
            written = {int(k): v for k, v in json.loads(done.stdout).items()}
        shown = [seq for seq in written if (seq - 1) % 4 in (2, 3)]  # text, call
        deadline = time.time() + 30
        while time.time() < deadline:
            seen = page.evaluate("window.__seen")
            if all(str(seq) in seen for seq in shown):
                break
            time.sleep(0.2)
        end(live, job)
        browser.close()
    missing = [seq for seq in shown if str(seq) not in seen]
    delays = sorted(
        (seen[str(seq)] / 1000 - written[seq]) * 1000 for seq in shown if str(seq) in seen
    )
    q = statistics.quantiles(delays, n=100)
    print(
        f"run page, {args.turns} turns, writer {args.writer}, queue {args.queue}:"
        f" {len(delays)} records, event -> visible p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms,"
        f" max {delays[-1]:.1f} ms; not shown: {len(missing)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    timed = commands.add_parser("latency")
    timed.add_argument("--turns", type=int, default=200)
    timed.add_argument("--interval", type=float, default=0.1)
    timed.add_argument("--writer", choices=("in-process", "process"), default="in-process")
    timed.add_argument("--queue", choices=("sqlite", "postgres"), default="sqlite")
    watched = commands.add_parser("watchers")
    watched.add_argument("--watchers", type=int, default=100)
    watched.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.command == "latency":
        latency(args)
    else:
        from bench.run_page_watchers import watchers

        watchers(args)


if __name__ == "__main__":
    main()
