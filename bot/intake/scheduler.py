"""The scheduler of `neo serve`: a job in the queue each time a repository's schedule fires.

Every `REFRESH_SECONDS` it lists the App's installations (`GET /app/installations`,
as the App) and each one's repositories (`GET /installation/repositories`, with
an installation token that may read contents and metadata, nothing more), and
reads each repository's `.github/neo.yml` from its default branch with a
conditional request: the ETag of the last answer goes out as `If-None-Match`,
and a 304 (which GitHub does not count against the rate limit) keeps the parse
cached in memory. Every `TICK_SECONDS` it asks `bot.intake.schedules.decide` about
every schedule and queues what fired.

A firing is queued once however many schedulers run: its dedupe key, also its
delivery id, is repository + schedule + slot, so a second replica or a restart
finds it already queued. The last slot queued for a schedule is read back from
the queue (`JobQueue.last_dedupe_key`) the first time a scheduler sees the
schedule, which is how downtime is caught up with one job, not one per slot.

Failures are one log line each and never stop it: a repository GitHub would
not answer for keeps its last known schedules until the next refresh.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from githubkit import GitHub
from githubkit.auth.app import AppInstallationAuthStrategy
from githubkit.exception import GitHubException, RequestFailed, RequestTimeout

from bot.config import CONFIG_PATH, Cron, RepoConfig, RepoConfigError, parse_repo_config
from bot.config.settings import Settings
from bot.github.app import GitHubApp, signed_in_app
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
_PAGE = 100
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


class _ReadAuth(AppInstallationAuthStrategy):
    """githubkit's installation auth, whose dataclass repr would print the App's key."""

    def __repr__(self) -> str:
        return f"InstallationAuth(installation_id={self.installation_id})"


class Scheduler:
    """Schedules of every repository the App is installed on, queued as they fire.

    `refresh` reads installations, repositories and configs from GitHub;
    `tick` queues what is due at `now`. Both take the time as an argument, so
    tests drive them with a fake clock; `run` calls them on the real one.
    `author` is the App's bot login, the author of scheduled jobs.
    """

    def __init__(
        self,
        app: GitHubApp,
        queue: JobQueue,
        *,
        author: str,
        max_jitter: timedelta = DEFAULT_MAX_JITTER,
        fetch_concurrency: int = FETCH_CONCURRENCY,
    ) -> None:
        self._app = app
        self._queue = queue
        self._author = author
        self._max_jitter = max_jitter
        self._fetching = asyncio.Semaphore(fetch_concurrency)
        self._repos: dict[str, _Repo] = {}  # by lower-case full name
        self._clients: dict[int, GitHub[_ReadAuth]] = {}

    @property
    def repositories(self) -> dict[str, RepoConfig | None]:
        """What the last refresh found: each repository's config (None: none usable)."""
        return {repo.full_name: repo.config for repo in self._repos.values()}

    # -- reading GitHub ------------------------------------------------------------

    async def refresh(self, now: datetime) -> None:
        """Read installations, their repositories and each one's config; `now` is when."""
        try:
            installations = await self._installations()
        except GitHubException as error:
            _log("scheduler_error", stage="list installations", error=_describe(error))
            return
        listed: dict[str, _Repo] = {}
        kept: set[int] = set()  # installations GitHub would not list: keep what we knew
        for installation_id in installations:
            try:
                found = await self._repositories(installation_id)
            except GitHubException as error:
                _log(
                    "scheduler_error",
                    stage="list repositories",
                    installation=installation_id,
                    error=_describe(error),
                )
                kept.add(installation_id)
                continue
            for full_name, default_branch in found:
                repo = self._repos.get(full_name.lower())
                if repo is None or repo.installation_id != installation_id:
                    repo = _Repo(full_name, installation_id, default_branch)
                elif repo.default_branch != default_branch:
                    repo.default_branch, repo.etag = default_branch, None
                listed[full_name.lower()] = repo
        for key, repo in self._repos.items():
            if repo.installation_id in kept:
                listed.setdefault(key, repo)
        self._repos = listed
        for installation_id in list(self._clients):
            if installation_id not in installations:
                del self._clients[installation_id]
        await asyncio.gather(*(self._read_config(repo, now) for repo in listed.values()))

    async def _installations(self) -> list[int]:
        github = self._app.app_client
        ids: list[int] = []
        async for installation in github.rest.paginate(
            github.rest.apps.async_list_installations, per_page=_PAGE
        ):
            # A suspended installation can mint no token.
            if installation.suspended_at is None:
                ids.append(installation.id)
        return ids

    async def _repositories(self, installation_id: int) -> list[tuple[str, str]]:
        github = self._client(installation_id)
        found: list[tuple[str, str]] = []
        async for repo in github.rest.paginate(
            github.rest.apps.async_list_repos_accessible_to_installation,
            map_func=lambda response: response.parsed_data.repositories,
            per_page=_PAGE,
        ):
            # Neo cannot push to an archived or disabled repository.
            if not repo.archived and not repo.disabled:
                found.append((repo.full_name, repo.default_branch))
        return found

    def _client(self, installation_id: int) -> GitHub[_ReadAuth]:
        client = self._clients.get(installation_id)
        if client is None:
            app = self._app.app_client
            # githubkit mints and caches this token in the App's own cache; the
            # App's per-repository job tokens cannot list an installation.
            auth = _ReadAuth(
                app_id=app.auth.app_id,
                private_key=app.auth.private_key,
                installation_id=installation_id,
                permissions={"contents": "read", "metadata": "read"},
            )
            client = app.with_auth(auth)
            self._clients[installation_id] = client
        return client

    async def _read_config(self, repo: _Repo, now: datetime) -> None:
        owner, name = repo.full_name.split("/", 1)
        github = self._client(repo.installation_id)
        headers = {"If-None-Match": repo.etag} if repo.etag else {}
        async with self._fetching:
            try:
                response = await github.rest.repos.async_get_content(
                    owner, name, CONFIG_PATH, ref=repo.default_branch, headers=headers
                )
            except GitHubException as error:
                if isinstance(error, RequestFailed) and error.response.status_code == 404:
                    self._configure(repo, None, None, now)  # no config: no schedules
                    return
                _log(
                    "scheduler_error",
                    stage="read config",
                    repository=repo.full_name,
                    error=_describe(error),
                )
                return
        if response.status_code == 304:  # unchanged: keep the parse, and the ticks' state
            return
        etag = response.headers.get("etag")
        try:
            data = response.parsed_data
            content = getattr(data, "content", None)
            if getattr(data, "type", None) != "file" or not isinstance(content, str):
                raise RepoConfigError(
                    f"{CONFIG_PATH}: not a file",
                    source=CONFIG_PATH,
                    problem="not a file",
                )
            config = parse_repo_config(base64.b64decode(content))
        except (ValueError, binascii.Error, RepoConfigError) as error:
            # Nobody to tell but the log: a schedule has no thread to comment on.
            # The worker reports a bad file on the next mention.
            problem = str(error) if isinstance(error, RepoConfigError) else "undecodable content"
            _log("schedule_config_invalid", repository=repo.full_name, error=problem)
            self._configure(repo, None, etag, now)
            return
        self._configure(repo, config, etag, now)

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
        _log("scheduler_error", stage=stage, error=_describe(error))


def _describe(error: BaseException) -> str:
    """One line about a failure, with no token and no body beyond GitHub's message."""
    if isinstance(error, RequestFailed):
        response = error.response.raw_response
        try:
            body = response.json()
        except ValueError:
            body = None
        message = body.get("message") if isinstance(body, dict) else None
        text = one_line(str(message), 200) if message else response.reason_phrase
        return f"github {response.status_code}: {text}"
    if isinstance(error, RequestTimeout):
        return "github: no answer in time"
    if isinstance(error, GitHubException):
        return f"github: {type(error).__name__}"
    return one_line(error)


def _log(event: str, **fields: object) -> None:
    log.info(json.dumps({"event": event, **fields}, default=str))


def _utcnow() -> datetime:
    return datetime.now(UTC)
