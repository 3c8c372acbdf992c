"""The scheduler of `neo serve`: a job in the queue each time a repository's schedule fires.

Every `REFRESH_SECONDS` it reads the installed repositories' `.github/neo.yml`; every
`TICK_SECONDS` it queues what `bot.intake.schedules.decide` says is due. How a firing
is queued once: docs/architecture.md, "Schedules".
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from bot.config import CONFIG_PATH, Cron, RepoConfig, RepoConfigError, parse_repo_config
from bot.config.settings import Settings
from bot.github.app import GitHubApp, signed_in_app
from bot.github.errors import GitHubError
from bot.github.installations import Installations
from bot.intake.schedules import (
    DEFAULT_MAX_JITTER,
    decide,
    dedupe_prefix,
    jitter_fraction,
    schedule_id,
    scheduled_request,
    slot_of_key,
)
from bot.jobs import JobRequest
from bot.queue import JobQueue, QueueError
from runner.text import one_line

__all__ = [
    "FETCH_CONCURRENCY",
    "REFRESH_SECONDS",
    "TICK_SECONDS",
    "Firing",
    "Scheduler",
    "run_scheduler",
]

log = logging.getLogger("neo.scheduler")

# How often schedules are checked: a slot is queued at most this long after
# it falls due. Checking 1,000 repositories costs milliseconds (bench/schedules.py).
TICK_SECONDS: Final = 30.0
# How often installations, repositories and configs are read again: a new or
# edited schedule takes effect within this. Unchanged configs answer 304, free
# of the rate limit; a repository without one costs a request each time.
REFRESH_SECONDS: Final = 15 * 60.0
# Config reads in flight at once.
FETCH_CONCURRENCY: Final = 8
# Beyond any slot: the schedule never fires again (cronsim found none in 50 years).
_NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Firing:
    """A slot this scheduler queued."""

    request: JobRequest
    due_at: datetime
    job_id: int


@dataclass(slots=True)
class _Entry:
    """One schedule of one repository, as the ticks see it."""

    index: int
    id: str
    cron: Cron
    fraction: float
    # When this scheduler first saw it: a schedule never queued starts here.
    since: datetime
    # The last slot queued; read from the queue once (`loaded`), then kept.
    last_slot: datetime | None = None
    loaded: bool = False
    # Nothing falls due before this; None: ask at the next tick.
    wake_at: datetime | None = None


@dataclass(slots=True)
class _Repo:
    full_name: str  # as GitHub spells it
    installation_id: int
    default_branch: str
    etag: str | None = None
    config: RepoConfig | None = None
    entries: list[_Entry] = field(default_factory=list)


class Scheduler:
    """Schedules of every repository the App is installed on, queued as they fire.

    `refresh` reads installations, repositories and configs from GitHub;
    `tick` queues what is due at `now`. Both take the time as an argument, so
    tests drive them with a fake clock; `run` calls them on the real one.
    `author` is the App's bot login, the author of scheduled jobs. `sleep`
    waits between retries of a GitHub read (tests replace it).
    """

    def __init__(
        self,
        app: GitHubApp,
        queue: JobQueue,
        *,
        author: str,
        max_jitter: timedelta = DEFAULT_MAX_JITTER,
        fetch_concurrency: int = FETCH_CONCURRENCY,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._github = Installations(app, bot_login=author, sleep=sleep)
        self._queue = queue
        self._author = author
        self._max_jitter = max_jitter
        self._fetching = asyncio.Semaphore(fetch_concurrency)
        self._repos: dict[str, _Repo] = {}  # by lower-case full name

    @property
    def repositories(self) -> dict[str, RepoConfig | None]:
        """What the last refresh found: each repository's config (None: none usable)."""
        return {repo.full_name: repo.config for repo in self._repos.values()}

    # -- reading GitHub ------------------------------------------------------------

    async def refresh(self, now: datetime) -> None:
        """Read installations, their repositories and each one's config; `now` is when."""
        try:
            installations = await self._github.active()
        except GitHubError as error:
            _log("scheduler_error", stage="list installations", error=one_line(error))
            return
        listed: dict[str, _Repo] = {}
        kept: set[int] = set()  # installations GitHub would not list: keep what we knew
        for installation_id in installations:
            try:
                found = await self._github.repositories(installation_id)
            except GitHubError as error:
                _log(
                    "scheduler_error",
                    stage="list repositories",
                    installation=installation_id,
                    error=one_line(error),
                )
                kept.add(installation_id)
                continue
            for each in found:
                key = each.full_name.lower()
                repo = self._repos.get(key)
                if repo is None or repo.installation_id != installation_id:
                    repo = _Repo(each.full_name, installation_id, each.default_branch)
                elif repo.default_branch != each.default_branch:
                    repo.default_branch, repo.etag = each.default_branch, None
                listed[key] = repo
        for key, repo in self._repos.items():
            if repo.installation_id in kept:
                listed.setdefault(key, repo)
        self._repos = listed
        self._github.forget(installations)
        await asyncio.gather(*(self._read_config(repo, now) for repo in listed.values()))

    async def _read_config(self, repo: _Repo, now: datetime) -> None:
        reader = self._github.reader(repo.installation_id, repo.full_name)
        async with self._fetching:
            try:
                read = await reader.read_file_if_changed(
                    CONFIG_PATH, repo.default_branch, repo.etag
                )
            except GitHubError as error:
                _log(
                    "scheduler_error",
                    stage="read config",
                    repository=repo.full_name,
                    error=one_line(error),
                )
                return
        if not read.modified:  # unchanged: keep the parse, and the ticks' state
            return
        if read.text is None and read.etag is None:
            self._configure(repo, None, None, now)  # no config: no schedules
            return
        try:
            if read.text is None:  # a directory, symlink or submodule answered with an ETag
                raise RepoConfigError(
                    f"{CONFIG_PATH}: not a file",
                    source=CONFIG_PATH,
                    problem="not a file",
                )
            config = parse_repo_config(read.text)
        except RepoConfigError as error:
            # Nobody to tell but the log: a schedule has no thread to comment on.
            # The worker reports a bad file on the next mention.
            _log("schedule_config_invalid", repository=repo.full_name, error=str(error))
            self._configure(repo, None, read.etag, now)
            return
        self._configure(repo, config, read.etag, now)

    def _configure(
        self, repo: _Repo, config: RepoConfig | None, etag: str | None, now: datetime
    ) -> None:
        """Adopt a new config, keeping what is known of schedules that stay."""
        known = {entry.id: entry for entry in repo.entries}
        entries: list[_Entry] = []
        for index, schedule in enumerate(config.schedules if config is not None else ()):
            assert config is not None
            ident = schedule_id(config, index)
            entry = known.get(ident)
            if entry is None:
                entry = _Entry(
                    index=index,
                    id=ident,
                    cron=Cron(schedule.cron),
                    fraction=jitter_fraction(repo.full_name, ident),
                    since=now,
                )
            else:
                # Its cron expression may have changed: decide afresh.
                entry.index, entry.cron, entry.wake_at = index, Cron(schedule.cron), None
            entries.append(entry)
        repo.config, repo.etag, repo.entries = config, etag, entries

    # -- queueing --------------------------------------------------------------------

    async def tick(self, now: datetime) -> list[Firing]:
        """Queue every slot due at `now`; return what this scheduler queued."""
        waiting = [
            (repo, entry)
            for repo in self._repos.values()
            if repo.config is not None
            for entry in repo.entries
            if entry.wake_at is None or entry.wake_at <= now
        ]
        await asyncio.gather(*(self._load(repo, entry) for repo, entry in waiting))
        firing: list[tuple[_Repo, _Entry, datetime, datetime]] = []
        for repo, entry in waiting:
            if not entry.loaded:
                continue  # the queue did not answer; next tick
            decision = decide(
                entry.cron,
                now=now,
                fraction=entry.fraction,
                last_slot=entry.last_slot,
                since=entry.since,
                max_jitter=self._max_jitter,
            )
            entry.wake_at = decision.wake_at or _NEVER
            if decision.slot is not None and decision.due_at is not None:
                firing.append((repo, entry, decision.slot, decision.due_at))
        queued = await asyncio.gather(*(self._enqueue(*item) for item in firing))
        return [item for item in queued if item is not None]

    async def _load(self, repo: _Repo, entry: _Entry) -> None:
        if entry.loaded:
            return
        prefix = dedupe_prefix(repo.full_name, entry.id)
        try:
            key = await self._queue.last_dedupe_key(prefix)
        except QueueError as error:
            _log("scheduler_error", stage="read queue", error=str(error))
            return
        entry.last_slot = None if key is None else slot_of_key(key, prefix)
        entry.loaded = True

    async def _enqueue(
        self, repo: _Repo, entry: _Entry, slot: datetime, due_at: datetime
    ) -> Firing | None:
        assert repo.config is not None
        request = scheduled_request(
            repository=repo.full_name,
            installation_id=repo.installation_id,
            config=repo.config,
            index=entry.index,
            slot=slot,
            author=self._author,
        )
        try:
            result = await self._queue.enqueue(request.delivery_id, [request])
        except QueueError as error:
            entry.wake_at = None  # try again at the next tick
            _log("scheduler_error", stage="enqueue", repository=repo.full_name, error=str(error))
            return None
        entry.last_slot = slot
        # The delivery id is the dedupe key: a slot another scheduler (or this
        # one, before a restart) queued is a duplicate delivery.
        if result.duplicate or not result.created:
            return None
        (job_id,) = result.created
        _log(
            "schedule_queued",
            repository=repo.full_name,
            schedule=entry.id,
            slot=slot.isoformat(),
            job=job_id,
        )
        return Firing(request, due_at, job_id)

    # -- the loop ------------------------------------------------------------------

    async def run(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        tick_seconds: float = TICK_SECONDS,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        """Refresh and tick until cancelled."""
        now = clock or _utcnow
        next_refresh: datetime | None = None
        while True:
            if next_refresh is None or now() >= next_refresh:
                await _guarded("refresh", self.refresh(now()))
                next_refresh = now() + timedelta(seconds=refresh_seconds)
            await _guarded("tick", self.tick(now()))
            await asyncio.sleep(tick_seconds)


async def run_scheduler(settings: Settings, queue: JobQueue) -> None:
    """Queue the jobs of every installed repository's schedules until cancelled.

    Raises ConfigError (one line) when the App's credentials do not work.
    """
    async with signed_in_app(settings) as (app, login):
        _log("scheduler_started", tick=TICK_SECONDS, refresh=REFRESH_SECONDS)
        await Scheduler(app, queue, author=login).run()


async def _guarded(stage: str, step: Awaitable[object]) -> None:
    # The loop outlives any one failure, expected or not: a scheduler that
    # died would stop every repository's schedules, silently. Each failure
    # is one log line.
    try:
        await step
    except Exception as error:
        _log("scheduler_error", stage=stage, error=one_line(error))


def _log(event: str, **fields: object) -> None:
    log.info(json.dumps({"event": event, **fields}, default=str))


def _utcnow() -> datetime:
    return datetime.now(UTC)
