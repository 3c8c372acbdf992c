"""CPU the scheduler spends on 1,000 repositories' schedules (target <= 1 s per minute).

Each repository gets one to three schedules, a mix of what maintenance asks
for: half-hourly, hourly, daily, weekly and monthly, at assorted minutes.
Three figures, CPU time (`time.process_time`, every thread of this process):

- cold: `bot.intake.schedules.decide` for every schedule at one instant, as if each
  tick asked about everything (the median of 5 instants). The worst a tick
  can cost.
- first tick: `Scheduler.tick` right after start-up, when it also reads each
  schedule's last queued slot from the queue.
- steady state: `Scheduler.tick` every 30 s over `--hours` of fake time, with
  a real SQLite queue taking the jobs. A schedule is asked about again only
  once its `wake_at` has passed, so a tick costs what falls due in it. Prints
  the median and the worst tick, and the CPU per minute of wall time (two
  ticks a minute), the issue's figure.

The repositories come from the fake GitHub of tests/fakes through the real
`refresh` (its wall time is printed too, for scale: GitHub's latency is not).

    uv run python -m bench.schedules [--repos 1000] [--hours 24]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.config import Cron
from bot.github.app import GitHubApp
from bot.intake.scheduler import TICK_SECONDS, Scheduler
from bot.intake.schedules import decide, jitter_fraction
from bot.queue import SqliteQueue
from tests.fakes import FakeGitHub

START = datetime(2025, 6, 2, 0, 0, 7, tzinfo=UTC)
# (weight, cron template): the minute and hour are filled in per schedule.
MIX = [
    (5, "{m} * * * *"),  # hourly
    (2, "{m},{m2} * * * *"),  # half-hourly
    (10, "{m} {h} * * *"),  # daily
    (6, "{m} {h} * * {dow}"),  # weekly
    (2, "{m} {h} {dom} * *"),  # monthly
]


def schedules_for(rng: random.Random) -> list[str]:
    crons = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        (template,) = rng.choices([t for _, t in MIX], weights=[w for w, _ in MIX])
        m = rng.randrange(0, 30)
        crons.append(
            template.format(
                m=m,
                m2=m + 30,
                h=rng.randrange(24),
                dow=rng.choice(["MON", "TUE", "SAT", "1-5"]),
                dom=rng.randrange(1, 29),
            )
        )
    return crons


def config_text(crons: list[str]) -> str:
    lines = ["schedules:"]
    for n, cron in enumerate(crons):
        lines += [f"  - name: chore {n}", f'    cron: "{cron}"', "    prompt: Do the chore."]
    return "\n".join(lines) + "\n"


def cold(repos: dict[str, list[str]]) -> tuple[float, int]:
    """Median CPU seconds of deciding every schedule at one instant; how many schedules."""
    parsed = [
        (Cron(cron), jitter_fraction(repo, str(n)))
        for repo, crons in repos.items()
        for n, cron in enumerate(crons)
    ]
    times = []
    for k in range(5):
        now = START + timedelta(hours=5 * k, minutes=13 * k, seconds=11 * k)
        started = time.process_time()
        for cron, fraction in parsed:
            decide(cron, now=now, fraction=fraction, last_slot=None, since=START)
        times.append(time.process_time() - started)
    return statistics.median(times), len(parsed)


async def service(repos: dict[str, list[str]], hours: float, scratch: Path) -> None:
    with FakeGitHub(slug="neo") as github:
        names = sorted(repos)
        per_installation = 100
        for i in range(0, len(names), per_installation):
            chunk = names[i : i + per_installation]
            github.install(10 + i, chunk[0].split("/")[0], [n.split("/")[1] for n in chunk])
        for repo, crons in repos.items():
            github.put_file(repo, ".github/neo.yml", config_text(crons))
        async with (
            GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app,
            SqliteQueue(scratch / "neo.db") as queue,
        ):
            scheduler = Scheduler(app, queue, author="neo[bot]")
            started = time.perf_counter()
            await scheduler.refresh(START - timedelta(minutes=1))
            refresh = time.perf_counter() - started
            configured = sum(1 for c in scheduler.repositories.values() if c and c.schedules)

            tick = timedelta(seconds=TICK_SECONDS)
            now = START
            started_cpu = time.process_time()
            await scheduler.tick(now)
            first = time.process_time() - started_cpu
            costs: list[float] = []
            queued = 0
            end = START + timedelta(hours=hours)
            while True:
                now += tick
                if now >= end:
                    break
                before = time.process_time()
                queued += len(await scheduler.tick(now))
                costs.append(time.process_time() - before)

    minutes = hours * 60
    per_minute = sum(costs) / minutes
    print(f"refresh (fake GitHub, {configured} repositories with schedules): {refresh:.2f} s wall")
    print(f"first tick (reads each schedule's last slot from the queue): {first * 1000:.0f} ms CPU")
    print(
        f"steady state over {hours:g} h: {len(costs)} ticks, {queued} jobs queued;"
        f" per tick median {statistics.median(costs) * 1000:.2f} ms,"
        f" worst {max(costs) * 1000:.1f} ms CPU"
    )
    print(f"  => {per_minute * 1000:.1f} ms CPU per minute of wall time (target <= 1000 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=24.0, help="fake time the ticks cover")
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    repos = {f"org{n // 100}/repo{n}": schedules_for(rng) for n in range(args.repos)}

    cost, count = cold(repos)
    print(f"{args.repos} repositories, {count} schedules")
    print(
        f"cold: deciding every schedule at once {cost * 1000:.0f} ms CPU"
        f" ({cost / count * 1e6:.0f} us each);"
        f" every tick so: {cost * 60 / TICK_SECONDS * 1000:.0f} ms CPU per minute"
    )
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(service(repos, args.hours, Path(scratch)))


if __name__ == "__main__":
    main()
