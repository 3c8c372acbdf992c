"""Thread sessions through the PostgreSQL queue: two worker hosts, each with its own
data directory, one database. The real worker, the fake GitHub and git server, the
anthropic SDK against the fake Messages API, the local sandbox."""

# ruff: noqa: F811 (the fixtures imported from test_loop)

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import Job, JobState
from bot.queue import JobQueue, PostgresQueue, SessionFiles, SqliteQueue, WakingQueue
from bot.worker.sessions import archive_of
from runner.job import session_id_for
from tests.bot.worker.test_loop import (  # noqa: F401 (fixtures)
    LEASE,
    REPO,
    _Clock,
    anthropic_env,
    app,
    clock,
    conversation,
    git_server,
    github,
    origin,
    request,
    run_until,
    script_edit,
    settings,
    worker,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, Stall, text, tool_use


@pytest.fixture
async def shared(postgres_url: str, clock: _Clock) -> AsyncIterator[PostgresQueue]:
    async with PostgresQueue(postgres_url, clock=clock) as opened:
        yield opened


@pytest.fixture
def other_host(settings: Settings, tmp_path: Path) -> Settings:
    """The second host's settings: its own data directory, nothing else different."""
    return settings.model_copy(update={"data_dir": tmp_path / "data-b"})


class _DiesAfterSavingTheSession:
    """The queue as a worker sees it whose process dies just after the run saved its
    session: before its report, so the job's retry runs it again. A dead process
    writes nothing more: the job hangs until the drain, and no release follows."""

    def __init__(self, queue: PostgresQueue) -> None:
        self._queue = queue
        self.died = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    async def load_session(self, session_id: str) -> SessionFiles | None:
        return await self._queue.load_session(session_id)

    async def save_session(
        self, job_id: int, worker: str, session_id: str, files: SessionFiles
    ) -> bool:
        saved = await self._queue.save_session(job_id, worker, session_id, files)
        self.died = True
        await asyncio.Event().wait()
        return saved

    async def release(self, *args: Any, **kwargs: Any) -> None:
        pass


def finished(queue: JobQueue, job_id: int) -> Callable[[], Coroutine[Any, Any, bool]]:
    async def check() -> bool:
        return (await get(queue, job_id)).state in (
            JobState.SUCCEEDED,
            JobState.FAILED,
            JobState.CANCELLED,
        )

    return check


async def get(queue: JobQueue, job_id: int) -> Job:
    job = await queue.get(job_id)
    assert job is not None
    return job


def script_answer(fake: FakeAnthropicAPI, line: str, words: str) -> None:
    """One edit adding `line` to the README, then `words` as the final answer."""
    fake.script(
        Reply(
            [
                tool_use(
                    f"t-{len(fake.requests)}-{line[:4]}",
                    "edit_file",
                    {
                        "path": "README.md",
                        "old_string": "# fixture\n",
                        "new_string": f"# fixture\n{line}\n",
                    },
                )
            ],
            "tool_use",
        ),
        Reply([text(words)]),
    )


def session_file(data_dir: Path, number: int) -> Path:
    return data_dir / "sessions" / f"{session_id_for(f'{REPO}#{number}')}.jsonl"


async def test_a_follow_up_on_another_host_continues_the_session_the_first_host_wrote(
    shared: PostgresQueue,
    app: GitHubApp,
    settings: Settings,
    other_host: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    first = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    one = (await shared.enqueue("d1", [request(number, first, delivery="d1")])).job_ids[0]
    await run_until(worker(shared, app, settings, name="host-a"), finished(shared, one))
    assert (await get(shared, one)).state is JobState.SUCCEEDED
    asked = len(fake_anthropic.requests)
    first_conversation = conversation(fake_anthropic, asked - 1)
    assert not session_file(other_host.data_dir, number).exists()

    second = github.add_comment(REPO, number, "@neo also say goodbye", user="mona")
    script_answer(fake_anthropic, "Goodbye.", "Added a goodbye.")
    follow_up = replace(request(number, second, delivery="d2"), instruction="@neo also say goodbye")
    two = (await shared.enqueue("d2", [follow_up])).job_ids[0]
    # Host B, woken the way `neo serve` wakes its workers: the archive is found through it.
    await run_until(
        worker(WakingQueue(shared), app, other_host, name="host-b"), finished(shared, two)
    )

    job = await get(shared, two)
    assert job.state is JobState.SUCCEEDED, job.result
    resumed = conversation(fake_anthropic, asked)
    assert resumed[: len(first_conversation)] == first_conversation
    assert "Added a line to README.md" in str(resumed[len(first_conversation)])
    assert "also say goodbye" in str(resumed[-1])
    # B's save is the database's copy now: A's next job will start from it.
    archived = await shared.load_session(session_id_for(f"{REPO}#{number}"))
    assert archived is not None
    assert b"Added a goodbye." in archived.transcript
    assert archived.transcript == session_file(other_host.data_dir, number).read_bytes()
    assert b"Added a goodbye." not in session_file(settings.data_dir, number).read_bytes()


async def test_a_retry_on_another_host_drops_the_dead_attempts_turns_and_keeps_the_earlier_jobs(
    shared: PostgresQueue,
    app: GitHubApp,
    settings: Settings,
    other_host: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    clock: _Clock,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    first = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    one = (await shared.enqueue("d1", [request(number, first, delivery="d1")])).job_ids[0]
    await run_until(worker(shared, app, settings, name="host-a"), finished(shared, one))

    second = github.add_comment(REPO, number, "@neo also say goodbye", user="mona")
    follow_up = replace(request(number, second, delivery="d2"), instruction="@neo also say goodbye")
    two = (await shared.enqueue("d2", [follow_up])).job_ids[0]
    script_answer(fake_anthropic, "Goodbye.", "The dead attempt's words.")
    dying = _DiesAfterSavingTheSession(shared)

    async def died() -> bool:
        return dying.died

    # Host A saves the attempt's session, then dies before it can record the outcome.
    await run_until(worker(dying, app, settings, name="host-a"), died)
    assert (await get(shared, two)).state is JobState.RUNNING
    archived = await shared.load_session(session_id_for(f"{REPO}#{number}"))
    assert archived is not None
    assert b"The dead attempt's words." in archived.transcript
    clock.now += LEASE + 1  # nobody heartbeats the dead worker's lease

    asked = len(fake_anthropic.requests)
    script_answer(fake_anthropic, "Farewell.", "The second attempt's words.")
    await run_until(worker(shared, app, other_host, name="host-b"), finished(shared, two))

    job = await get(shared, two)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.attempts == 2
    retried = str(conversation(fake_anthropic, asked))
    # The first job's turns came from the database; the dead attempt's were dropped.
    assert "Added a line to README.md" in retried
    assert "The dead attempt's words." not in retried
    archived = await shared.load_session(session_id_for(f"{REPO}#{number}"))
    assert archived is not None
    assert b"The second attempt's words." in archived.transcript
    assert b"The dead attempt's words." not in archived.transcript


async def test_the_sqlite_queue_keeps_no_sessions_of_its_own(tmp_path: Path) -> None:
    async with SqliteQueue(tmp_path / "neo.db") as opened:
        assert archive_of(opened) is None
        assert archive_of(WakingQueue(opened)) is None


async def test_the_postgres_queue_is_found_as_the_archive_through_a_waking_queue(
    shared: PostgresQueue,
) -> None:
    assert archive_of(shared) is shared
    assert archive_of(WakingQueue(shared)) is shared


async def test_a_zombie_that_lost_its_lease_cannot_overwrite_the_session_of_the_host_that_took_over(
    shared: PostgresQueue,
    app: GitHubApp,
    settings: Settings,
    other_host: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    caplog: pytest.LogCaptureFixture,
    postgres_url: str,
) -> None:
    caplog.set_level(logging.INFO, logger="neo.worker")
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    first = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    fake_anthropic.script(Stall(60.0))
    job_id = (await shared.enqueue("d1", [request(number, first, delivery="d1")])).job_ids[0]
    # Host A never beats: it hangs, and does not hear that its lease went to B. One
    # slot, hung: it cannot claim the job back itself once the lease is taken.
    zombie = worker(
        shared, app, settings, name="host-a", heartbeat_every=3600.0, grace=0.2, concurrency=1
    )
    stop_zombie = asyncio.Event()
    hung = asyncio.create_task(zombie.run(stop_zombie))
    try:
        while not fake_anthropic.requests:
            assert not hung.done(), hung
            await asyncio.sleep(0.05)
        # What `requeue_expired` does to a lease nobody renewed.
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute(
                "SELECT procrastinate_retry_job_v2(%s, NULL, NULL, NULL, NULL)", (job_id,)
            )
            await conn.execute(
                "UPDATE neo_jobs SET worker = NULL, lease_expires_at = NULL WHERE id = %s",
                (job_id,),
            )
        script_answer(fake_anthropic, "Hello from B.", "Host B's words.")
        await run_until(worker(shared, app, other_host, name="host-b"), finished(shared, job_id))
        assert (await get(shared, job_id)).state is JobState.SUCCEEDED
    finally:
        # The zombie wakes: its run is stopped, and its save comes after B's.
        stop_zombie.set()
        await asyncio.wait_for(hung, 30)

    archived = await shared.load_session(session_id_for(f"{REPO}#{number}"))
    assert archived is not None
    assert b"Host B's words." in archived.transcript
    assert archived.transcript == session_file(other_host.data_dir, number).read_bytes()
    refused = [
        json.loads(r.getMessage())
        for r in caplog.records
        if '"session_save_refused"' in r.getMessage()
    ]
    assert [(line["worker"], line["job"]) for line in refused] == [("host-a", job_id)]
    finished_by = [
        json.loads(r.getMessage())["worker"]
        for r in caplog.records
        if '"job_finished"' in r.getMessage()
    ]
    assert finished_by == ["host-b"]  # the zombie never finished it, once or again


def script_subagent(fake: FakeAnthropicAPI, tag: str) -> None:
    """The run hands one investigation to a subagent, which answers `tag`'s findings."""
    fake.script(
        Reply(
            [
                tool_use(
                    f"agent-{tag}",
                    "agent",
                    {"description": f"look {tag}", "prompt": f"Find where {tag} is said."},
                )
            ],
            "tool_use",
        ),
        Reply([text(f"Findings {tag}: README.md line 1.")]),
        Reply([text(f"Done with {tag}.")]),
    )


async def test_subagent_transcripts_follow_the_thread_and_keep_their_numbers(
    shared: PostgresQueue,
    app: GitHubApp,
    settings: Settings,
    other_host: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Where do we say hello?", user="mona")
    first = github.add_comment(REPO, number, "@neo where is hello said?", user="mona")
    script_subagent(fake_anthropic, "first")
    one = (await shared.enqueue("d1", [request(number, first, delivery="d1")])).job_ids[0]
    await run_until(worker(shared, app, settings, name="host-a"), finished(shared, one))

    second = github.add_comment(REPO, number, "@neo and goodbye?", user="mona")
    script_subagent(fake_anthropic, "second")
    follow_up = replace(request(number, second, delivery="d2"), instruction="@neo and goodbye?")
    two = (await shared.enqueue("d2", [follow_up])).job_ids[0]
    await run_until(worker(shared, app, other_host, name="host-b"), finished(shared, two))

    assert (await get(shared, two)).state is JobState.SUCCEEDED
    archived = await shared.load_session(session_id_for(f"{REPO}#{number}"))
    assert archived is not None
    # B numbered its subagent after A's: A's transcript is still the first.
    assert [n for n, _ in archived.children] == [1, 2]
    children = dict(archived.children)
    assert b"Findings first" in children[1]
    assert b"Findings second" in children[2]


async def test_a_session_the_database_cannot_give_fails_the_job_in_one_line_before_any_model_call(
    shared: PostgresQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    postgres_url: str,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    first = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    job_id = (await shared.enqueue("d1", [request(number, first, delivery="d1")])).job_ids[0]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE neo_session_children, neo_sessions")

    await run_until(worker(shared, app, settings, name="host-a"), finished(shared, job_id))

    job = await get(shared, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error is not None
    assert job.result.error == (
        "session_error: cannot load the thread's session:"
        ' the queue database failed: relation "neo_sessions" does not exist'
    )
    assert fake_anthropic.requests == []
