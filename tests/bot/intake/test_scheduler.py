"""bot.intake.scheduler against the fake GitHub and a real SQLite queue, under a fake clock;
and `neo serve` running it."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.config import parse_repo_config
from bot.config.reference import reference_markdown
from bot.github.app import GitHubApp
from bot.intake.scheduler import REFRESH_SECONDS, Firing, Scheduler
from bot.intake.schedules import (
    DEFAULT_MAX_JITTER,
    SCHEDULE_EVENT,
    dedupe_key,
    jitter,
    jitter_fraction,
    scheduled_request,
)
from bot.jobs import Job, TriggerKind
from bot.queue import SqliteQueue
from tests.bot.serving import NEO, neo_serve, serve_env
from tests.fakes import FakeGitHub

TICK = timedelta(seconds=30)
T0 = datetime(2025, 6, 2, 8, 59, tzinfo=UTC)  # a Monday
REPO = "octo/hello"
CONFIG_ROUTE = f"/repos/{REPO}/contents/.github/neo.yml"
EVERY_TEN = """\
schedules:
  - name: lint
    cron: "*/10 * * * *"
    prompt: Fix the lint.
"""
HOURLY = """\
schedules:
  - cron: "0 * * * *"
    prompt: Refresh the docs.
    branch: neo/docs
"""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(slug="neo") as fake:
        fake.install(7, "octo", ["hello", "world"])
        yield fake


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[SqliteQueue]:
    async with SqliteQueue(tmp_path / "neo.db") as opened:
        yield opened


def scheduler(app: GitHubApp, queue: SqliteQueue) -> Scheduler:
    return Scheduler(app, queue, author="neo[bot]")


async def run(
    schedulers: list[Scheduler], start: datetime, end: datetime
) -> list[tuple[datetime, Firing]]:
    """Tick every scheduler every 30 s of fake time in [start, end); what each queued, when."""
    fired: list[tuple[datetime, Firing]] = []
    now = start
    while now < end:
        for each in schedulers:
            fired.extend((now, firing) for firing in await each.tick(now))
        now += TICK
    return fired


async def scheduled_jobs(queue: SqliteQueue) -> list[Job]:
    jobs = await queue.list(limit=1000)
    return sorted(
        (job for job in jobs if job.request.event == SCHEDULE_EVENT), key=lambda job: job.id
    )


def slots(jobs: list[Job]) -> list[datetime]:
    return [datetime.fromtimestamp(job.request.trigger_id, UTC) for job in jobs]


def config_reads(github: FakeGitHub, repository: str = REPO) -> list[int]:
    route = f"/repos/{repository}/contents/.github/neo.yml"
    return [r.status for r in github.requests if r.route == route]


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return T0.replace(hour=hour, minute=minute, second=second)


# --- queueing ----------------------------------------------------------------------


async def test_a_schedule_is_queued_once_per_slot_when_it_falls_due(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", EVERY_TEN)
    one = scheduler(app, queue)
    await one.refresh(T0)

    fired = await run([one], T0, at(10))

    jobs = await scheduled_jobs(queue)
    expected = [at(9, minute) for minute in range(0, 60, 10)]
    assert slots(jobs) == expected
    assert [firing.job_id for _, firing in fired] == [job.id for job in jobs]
    fraction = jitter_fraction(REPO, "lint")
    for (when, firing), slot in zip(fired, expected, strict=True):
        due = slot + jitter(fraction, slot, slot + timedelta(minutes=10), DEFAULT_MAX_JITTER)
        assert firing.due_at == due
        assert due <= when < due + TICK
    request = jobs[0].request
    assert request == scheduled_request(
        repository=REPO,
        installation_id=7,
        config=one.repositories[REPO] or pytest.fail("no config"),
        index=0,
        slot=at(9),
        author="neo[bot]",
    )
    assert (request.kind, request.thread.number, request.branch) == ("task", 0, "neo/schedule-lint")
    assert request.trigger is TriggerKind.SCHEDULE
    assert request.instruction == "Fix the lint."


async def test_a_restarted_scheduler_queues_the_latest_missed_slot_once(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    before = scheduler(app, queue)
    await before.refresh(T0)
    await run([before], T0, at(9, 10))
    assert slots(await scheduled_jobs(queue)) == [at(9)]

    # Down from 09:10 to 12:30: 10:00, 11:00 and 12:00 passed. A new process
    # knows only what the queue holds.
    after = scheduler(app, queue)
    await after.refresh(at(12, 30))
    await run([after], at(12, 30), at(13))

    jobs = await scheduled_jobs(queue)
    assert slots(jobs) == [at(9), at(12)]
    assert jobs[1].created_at >= jobs[0].created_at
    await run([after], at(13), at(14, 10))
    assert slots(await scheduled_jobs(queue)) == [at(9), at(12), at(13), at(14)]


async def test_a_schedule_first_seen_after_its_slot_waits_for_the_next(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)
    await one.refresh(at(9, 30))

    await run([one], at(9, 30), at(10, 10))

    assert slots(await scheduled_jobs(queue)) == [at(10)]


async def test_two_schedulers_on_one_queue_queue_each_slot_once(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue, tmp_path: Path
) -> None:
    github.put_file(REPO, ".github/neo.yml", EVERY_TEN)
    github.put_file("octo/world", ".github/neo.yml", HOURLY)
    # Another replica: its own App client, its own connection to the same file.
    async with (
        GitHubApp(github.app_id, github.private_key_pem, github.base_url) as other_app,
        SqliteQueue(queue.path) as other_queue,
    ):
        first, second = scheduler(app, queue), scheduler(other_app, other_queue)
        await first.refresh(T0)
        await second.refresh(T0 + timedelta(seconds=1))

        fired = await run([first, second], T0, at(10, 5))
        # And both at once, racing for the same slots.
        racing = await asyncio.gather(first.tick(at(10, 15)), second.tick(at(10, 15)))
        fired += [(at(10, 15), firing) for firing in racing[0] + racing[1]]
        fired += await run([second, first], at(10, 15), at(10, 20))

    jobs = await scheduled_jobs(queue)
    keys = [job.request.dedupe_key for job in jobs]
    assert len(keys) == len(set(keys))
    hello = [job for job in jobs if job.request.thread.repository == REPO]
    world = [job for job in jobs if job.request.thread.repository == "octo/world"]
    assert slots(hello) == [at(9, minute) for minute in range(0, 60, 10)] + [at(10), at(10, 10)]
    assert slots(world) == [at(9), at(10)]
    # Each job was queued by exactly one of the two.
    assert sorted(firing.job_id for _, firing in fired) == [job.id for job in jobs]
    assert len({firing.request.dedupe_key for _, firing in fired}) == len(fired)


async def test_a_job_already_queued_for_a_slot_is_not_queued_again(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)
    await one.refresh(T0)
    config = one.repositories[REPO]
    assert config is not None
    # What a crashed process had queued for 09:00 just before it died.
    request = scheduled_request(
        repository=REPO, installation_id=7, config=config, index=0, slot=at(9), author="x"
    )
    await queue.enqueue(request.delivery_id, [request])

    fired = await run([one], T0, at(9, 30))

    assert fired == []
    assert len(await scheduled_jobs(queue)) == 1


# --- reading GitHub ----------------------------------------------------------------


async def test_configs_are_read_with_conditional_requests_and_a_304_reuses_the_cache(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)

    await one.refresh(T0)
    await one.refresh(T0 + timedelta(minutes=15))
    await one.refresh(T0 + timedelta(minutes=30))
    await run([one], at(9, 29), at(10, 10))

    assert config_reads(github) == [200, 304, 304]
    assert slots(await scheduled_jobs(queue)) == [at(9), at(10)]

    # An edit is a new ETag: read in full, and the new schedule takes over.
    github.put_file(REPO, ".github/neo.yml", EVERY_TEN)
    await one.refresh(at(10, 10))
    await run([one], at(10, 10), at(10, 35))

    assert config_reads(github) == [200, 304, 304, 200]
    # "lint" is a new schedule, seen at 10:10 before its first slot fell due.
    assert slots(await scheduled_jobs(queue)) == [
        at(9),
        at(10),
        at(10, 10),
        at(10, 20),
        at(10, 30),
    ]


async def test_the_scheduler_lists_with_an_installation_wide_read_only_token(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)

    await one.refresh(T0)
    await one.refresh(T0 + timedelta(minutes=15))

    assert set(one.repositories) == {"octo/hello", "octo/world"}
    assert one.repositories["octo/world"] is None  # no config: no schedules
    assert config_reads(github, "octo/world") == [404, 404]
    (token,) = github.token_requests  # minted once, then reused
    assert token.installation_id == 7
    assert token.repositories is None
    assert token.permissions == {"contents": "read", "metadata": "read"}
    listing = [r for r in github.requests if r.route == "/installation/repositories"]
    assert [r.auth for r in listing] == ["installation", "installation"]


async def test_installations_and_repositories_are_read_page_by_page(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    for n in range(100):
        github.install(100 + n, f"org{n}", ["repo"])
    github.install(8, "big", [f"r{n}" for n in range(105)])
    github.put_file("big/r104", ".github/neo.yml", HOURLY)
    github.put_file("org99/repo", ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)

    await one.refresh(T0)
    await run([one], T0, at(9, 10))

    assert len(one.repositories) == 2 + 100 + 105
    pages = [r.path for r in github.requests if r.route == "/app/installations"]
    assert len(pages) == 2
    big = [r for r in github.requests if r.route == "/installation/repositories"]
    assert len(big) == 1 + 100 + 2  # a page per small installation, two for the big one
    assert {job.request.thread.repository for job in await scheduled_jobs(queue)} == {
        "big/r104",
        "org99/repo",
    }


async def test_suspended_installations_and_archived_repositories_are_skipped(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.install(9, "frozen", ["ice"])
    github.suspend(9)
    github.put_file("frozen/ice", ".github/neo.yml", HOURLY)
    github.archive("octo/world")
    github.put_file("octo/world", ".github/neo.yml", HOURLY)
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)

    await one.refresh(T0)
    await run([one], T0, at(9, 10))

    assert set(one.repositories) == {REPO}
    assert [r.installation_id for r in github.token_requests] == [7]
    assert {job.request.thread.repository for job in await scheduled_jobs(queue)} == {REPO}


async def test_an_invalid_config_is_one_log_line_and_no_schedule(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue, caplog: pytest.LogCaptureFixture
) -> None:
    github.put_file(REPO, ".github/neo.yml", "schedules: [{cron: '61 * * * *', prompt: x}]\n")
    one = scheduler(app, queue)

    with caplog.at_level(logging.INFO, logger="neo.scheduler"):
        await one.refresh(T0)
        await one.refresh(T0 + timedelta(minutes=15))
        await run([one], T0, at(10, 10))

    assert one.repositories[REPO] is None
    assert await scheduled_jobs(queue) == []
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neo.scheduler"]
    assert lines == [
        {
            "event": "schedule_config_invalid",
            "repository": REPO,
            "error": ".github/neo.yml: schedules[0].cron: minute 61 is out of range 0-59",
        }
    ]
    assert config_reads(github) == [200, 304]


async def test_a_failed_read_keeps_the_schedules_last_known(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue, caplog: pytest.LogCaptureFixture
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)
    await one.refresh(T0)

    # Errors bot.github.core does not retry (it retries 5xx and rate limits):
    # the listing fails first, then, listed again, the config read.
    forbidden = "Resource not accessible by integration"
    github.fail_next("GET", CONFIG_ROUTE, 403, message=forbidden)
    github.fail_next("GET", "/app/installations", 403, message=forbidden)
    with caplog.at_level(logging.INFO, logger="neo.scheduler"):
        await one.refresh(T0 + timedelta(minutes=1))
        await one.refresh(T0 + timedelta(minutes=2))
    await run([one], T0, at(9, 10))

    assert slots(await scheduled_jobs(queue)) == [at(9)]
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neo.scheduler"]
    assert lines == [
        {
            "event": "scheduler_error",
            "stage": "list installations",
            "error": f"github 403 GET /app/installations: {forbidden}",
        },
        {
            "event": "scheduler_error",
            "stage": "read config",
            "repository": REPO,
            "error": f"github 403 GET {CONFIG_ROUTE}: {forbidden}",
        },
    ]


async def test_a_5xx_or_a_secondary_limit_is_retried_not_logged(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue, caplog: pytest.LogCaptureFixture
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    one = Scheduler(app, queue, author="neo[bot]", sleep=sleep)
    github.fail_next("GET", "/app/installations", 502)
    github.fail_next("GET", "/installation/repositories", 403, headers={"retry-after": "3"})
    github.fail_next("GET", CONFIG_ROUTE, 503, times=2)
    with caplog.at_level(logging.INFO, logger="neo.scheduler"):
        await one.refresh(T0)
    await run([one], T0, at(9, 10))

    assert [r.getMessage() for r in caplog.records if r.name == "neo.scheduler"] == []
    assert config_reads(github) == [503, 503, 200]
    assert waits == [1.0, 3.0, 1.0, 2.0]
    assert slots(await scheduled_jobs(queue)) == [at(9)]


async def test_an_uninstalled_repository_stops_being_scheduled(
    github: FakeGitHub, app: GitHubApp, queue: SqliteQueue
) -> None:
    github.put_file(REPO, ".github/neo.yml", HOURLY)
    one = scheduler(app, queue)
    await one.refresh(T0)
    await run([one], T0, at(9, 10))

    github.install(7, "octo", ["world"])
    await one.refresh(at(9, 30))
    await run([one], at(9, 30), at(11, 10))

    assert slots(await scheduled_jobs(queue)) == [at(9)]
    assert set(one.repositories) == {"octo/world"}


# --- the queue's part ---------------------------------------------------------------


async def test_the_queue_finds_the_greatest_key_with_a_prefix(queue: SqliteQueue) -> None:
    config = parse_repo_config(EVERY_TEN)
    for repository, slot in [
        ("octo/hello", at(9)),
        ("octo/hello", at(9, 20)),
        ("octo/hello", at(9, 10)),
        ("octo/hello-world", at(11)),
        ("octo/hellp", at(12)),
    ]:
        request = scheduled_request(
            repository=repository, installation_id=7, config=config, index=0, slot=slot, author="b"
        )
        await queue.enqueue(request.delivery_id, [request])

    assert await queue.last_dedupe_key("schedule:octo/hello:lint:") == dedupe_key(
        "octo/hello", "lint", at(9, 20)
    )
    assert await queue.last_dedupe_key("schedule:octo/hello:other:") is None
    assert await queue.last_dedupe_key("schedule:octo/hello-world:") == dedupe_key(
        "octo/hello-world", "lint", at(11)
    )
    with pytest.raises(ValueError, match="empty"):
        await queue.last_dedupe_key("")


def test_the_reference_states_the_jitter_and_refresh_figures() -> None:
    text = reference_markdown()

    assert f"up to {int(DEFAULT_MAX_JITTER.total_seconds() // 60)} minutes after" in text
    assert f"within {int(REFRESH_SECONDS // 60)} minutes" in text


# --- neo serve ----------------------------------------------------------------------


def neo_jobs(env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(NEO), "jobs", "list", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed = json.loads(done.stdout)
    assert isinstance(listed, list)
    return listed


async def test_neo_serve_runs_the_scheduler_and_stops_it_on_shutdown(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.put_file(REPO, ".github/neo.yml", EVERY_TEN)
    env = serve_env(github, tmp_path / "data")
    # The queue remembers a slot queued long ago, so the scheduler has one to
    # catch up on as soon as it starts, whatever the time.
    old = scheduled_request(
        repository=REPO,
        installation_id=7,
        config=parse_repo_config(EVERY_TEN),
        index=0,
        slot=datetime(2020, 1, 1, tzinfo=UTC),
        author="neo[bot]",
    )
    async with SqliteQueue(tmp_path / "data" / "neo.db") as seeded:
        await seeded.enqueue(old.delivery_id, [old])

    with neo_serve(env, tmp_path / "serve.log") as server:
        deadline = time.monotonic() + 120
        while len(jobs := neo_jobs(env)) < 2:
            assert time.monotonic() < deadline, Path(server.log).read_text()
            time.sleep(0.5)
        # Shutdown cancels the scheduler: the process ends, and gracefully
        # (uvicorn then re-raises the SIGTERM it caught).
        server.process.terminate()
        server.process.wait(timeout=30)

    newest = jobs[0]["request"]
    assert newest["event"] == "schedule"
    assert newest["branch"] == "neo/schedule-lint"
    assert newest["author"] == "neo[bot]"
    assert newest["dedupe_key"].startswith("schedule:octo/hello:lint:")
    assert newest["dedupe_key"] > old.dedupe_key
    log = Path(server.log).read_text()
    events = [json.loads(line)["event"] for line in log.splitlines() if line.startswith("{")]
    assert events[0] == "started"
    assert "scheduler_started" in events
    assert "schedule_queued" in events
    assert "scheduler_error" not in events
    assert "Traceback" not in log
    assert log.rstrip().endswith(f"Finished server process [{server.process.pid}]")
