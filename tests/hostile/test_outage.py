"""PostgreSQL stopped while a job finishes: one model run, one push, the spend once.

Real `neo worker` processes on a PostgreSQL cluster of the module's own (each
test a database of its own on it), which a test stops when the model gives its
last answer (so the job's finish finds no database) and starts again once the
job's lease has run out. The job's work
is published meanwhile (pushed, its pull request and report on GitHub).
Whether the worker lives through the outage (it writes the outcome it kept)
or dies in it (the next attempt finds the report and writes what it says),
the job is never run again and its spend is stored once.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.jobs import Conclusion, Job, JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.queue import PostgresQueue
from tests.bot.serving import AppGitServer, WorkerProcess, neo_worker, serve_env
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    Reply,
    ScriptedReply,
    Usage,
    make_repo,
    text,
    tool_use,
)
from tests.postgres import Cluster, own_cluster

REPO = "octo/hello"
INSTALLATION = 42
LEASE = 3.0
USAGE = Usage(input_tokens=1_000, output_tokens=50)
FINAL = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass
class Model:
    """An edit, then the last answer; the database goes down as that answer is given."""

    postgres: Cluster
    stopped: threading.Event = field(default_factory=threading.Event)
    calls: int = 0

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        self.calls += 1
        last = body["messages"][-1]["content"]
        answered = not isinstance(last, str) and any(
            block.get("type") == "tool_result" for block in last
        )
        if not answered:
            edit = {"command": "echo done >> notes.md"}
            return Reply([tool_use(f"toolu_{self.calls}", "bash", edit)], "tool_use", usage=USAGE)
        if not self.stopped.is_set():
            self.postgres.stop()
            self.stopped.set()
        return Reply([text("Appended a line to notes.md.")], usage=USAGE)


@dataclass
class Setup:
    postgres: Cluster
    url: str
    github: FakeGitHub
    git: AppGitServer
    anthropic: FakeAnthropicAPI
    # Answers every model call; a test may put another in its place.
    model: Model | Stalling
    env: dict[str, str]
    job_id: int

    def answer(self, body: dict[str, Any]) -> ScriptedReply:
        return self.model(body)


@pytest.fixture(scope="module")
def postgres() -> Iterator[Cluster]:
    """The module's cluster: each test stops it, and leaves it started again."""
    with own_cluster() as made:
        yield made


_databases = count()


@pytest.fixture
def setup(postgres: Cluster, tmp_path: Path) -> Iterator[Setup]:
    with ExitStack() as stack:
        # The next test finds the server up, whatever this one left.
        stack.callback(_started, postgres)
        # Libpq's own parameter, which the queue's pool waits by too: an
        # operation while the server is down fails after 2 s, not 10.
        url = postgres.database(f"neo_{next(_databases)}") + "?connect_timeout=2"
        github = stack.enter_context(FakeGitHub())
        anthropic = stack.enter_context(FakeAnthropicAPI())
        served = tmp_path / "served"
        served.mkdir()
        git = AppGitServer(served, github)
        stack.enter_context(git)
        github.install(INSTALLATION, "octo", ["hello"])
        github.set_permission(REPO, "mona", "write")
        make_repo(served / "octo" / "hello.git", files=1, file_size=64)
        number = github.add_issue(REPO, "Add a line", "Some work.", user="mona")
        comment = github.add_comment(REPO, number, "@neo please add a line", user="mona")
        env = {
            **serve_env(github, tmp_path / "unused"),
            **anthropic.env,
            "NEO_QUEUE_URL": url,
            "NEO_GITHUB_GIT_URL": git.base_url,
            "NEO_WORKER_LEASE": str(LEASE),
        }
        request = JobRequest(
            kind=JobKind.TASK,
            thread=Thread(repository=REPO, number=number),
            installation_id=INSTALLATION,
            event="issue_comment.created",
            trigger=TriggerKind("issue_comment.created"),
            trigger_id=comment,
            author="mona",
            author_association="COLLABORATOR",
            instruction="@neo please add a line",
            dedupe_key=f"issue_comment:{comment}",
            delivery_id="d-outage",
        )
        job_id = asyncio.run(_enqueue(url, request))
        made = Setup(postgres, url, github, git, anthropic, Model(postgres), env, job_id)
        anthropic.script(*[made.answer] * 10)
        yield made


def _started(postgres: Cluster) -> None:
    if not postgres.running():
        postgres.start()


async def _enqueue(url: str, request: JobRequest) -> int:
    async with PostgresQueue(url, listen=False) as queue:
        (job_id,) = (await queue.enqueue(request.delivery_id, [request])).job_ids
    return job_id


def until(what: str, done: Callable[[], bool], logs: list[Path], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in logs)
            pytest.fail(f"{what}: not within {seconds:g} s\n{tails}")
        time.sleep(0.1)


def events(log: Path, name: str) -> list[dict[str, Any]]:
    found = []
    for line in log.read_text().splitlines():
        if line.startswith("{") and f'"event": "{name}"' in line:
            found.append(json.loads(line))
    return found


def reported(setup: Setup) -> bool:
    mine = [
        c for c in setup.github.comments(REPO, 1) if c["user"]["login"] == setup.github.bot_login
    ]
    return any("**Done**" in c["body"] for c in mine)


def let_the_lease_run_out(log: Path) -> None:
    """Once the worker has found it cannot write the outcome, two leases more: the last
    heartbeat came before the database went down, so the job's lease has run out by
    then, and a sweep would put the job back."""
    until("the outcome kept", lambda: bool(events(log, "outcome_unwritten")), [log])
    time.sleep(2 * LEASE)


async def _finished(url: str, job_id: int) -> Job:
    async with PostgresQueue(url, listen=False) as queue:
        while True:
            job = await queue.get(job_id)
            assert job is not None
            if job.state in FINAL:
                return job
            await asyncio.sleep(0.2)


def finished(setup: Setup, logs: list[Path]) -> Job:
    try:
        return asyncio.run(asyncio.wait_for(_finished(setup.url, setup.job_id), 120))
    except TimeoutError:
        tails = "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in logs)
        pytest.fail(f"the job did not finish within 120 s\n{tails}")


def spend_rows(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT job_id, model, cost_usd FROM neo_spend").fetchall()


def pushes(setup: Setup) -> int:
    return sum(
        1
        for request in setup.git.requests
        if request.method == "POST" and request.service == "git-receive-pack"
    )


def assert_done_once(setup: Setup, job: Job) -> None:
    """One model run, one push, one pull request and report, the spend stored once."""
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS
    assert setup.model.calls == 2
    assert pushes(setup) == 1
    [pull] = setup.github.pulls(REPO)
    assert job.result.pr_url == pull["html_url"]
    bot = [
        c for c in setup.github.comments(REPO, 1) if c["user"]["login"] == setup.github.bot_login
    ]
    assert len(bot) == 1
    assert "**Done**" in bot[0]["body"]
    assert job.result.report is not None
    assert "**Done**" in job.result.report
    rows = spend_rows(setup.url)
    assert [(job_id, cost) for job_id, _, cost in rows] == [(setup.job_id, job.result.cost_usd)]
    assert job.result.cost_usd is not None
    assert job.result.cost_usd > 0


def no_traceback(*logs: Path) -> None:
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, text[-4000:]


def test_a_worker_that_lives_through_the_outage_writes_the_outcome_it_kept(
    setup: Setup, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    with neo_worker({**setup.env, "NEO_DATA_DIR": str(tmp_path / "host")}, log):
        until("the report on GitHub, the database down", lambda: reported(setup), [log])
        assert setup.model.stopped.is_set()
        let_the_lease_run_out(log)
        setup.postgres.start()
        job = finished(setup, [log])

    assert_done_once(setup, job)
    assert job.attempts == 1
    assert [e["job"] for e in events(log, "outcome_unwritten")] == [setup.job_id]
    assert [e["job"] for e in events(log, "outcome_written")] == [setup.job_id]
    no_traceback(log)


def test_a_worker_that_dies_in_the_outage_leaves_the_job_to_its_report(
    setup: Setup, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    env = {**setup.env, "NEO_DATA_DIR": str(tmp_path / "host")}
    with neo_worker(env, first) as dying:
        until("the report on GitHub, the database down", lambda: reported(setup), [first])
        dying.kill()
    setup.postgres.start()
    with neo_worker({**env, "NEO_DATA_DIR": str(tmp_path / "other-host")}, second):
        job = finished(setup, [first, second])

    assert_done_once(setup, job)
    assert job.attempts == 2
    [closed] = events(second, "job_already_reported")
    assert (closed["job"], closed["reported_by"]) == (setup.job_id, 1)
    no_traceback(first, second)


def test_another_host_sweeping_first_runs_nothing_again(setup: Setup, tmp_path: Path) -> None:
    """Two hosts: the one that ran the job waits for the database, the other sweeps the
    expired lease as soon as it is back. Whichever comes first, the job runs once."""
    one, two = tmp_path / "one.log", tmp_path / "two.log"
    env = {**setup.env, "NEO_DATA_DIR": str(tmp_path / "one")}
    with neo_worker(env, one):
        until("the report on GitHub, the database down", lambda: reported(setup), [one])
        let_the_lease_run_out(one)
        idle: WorkerProcess
        with neo_worker({**env, "NEO_DATA_DIR": str(tmp_path / "two")}, two, wait=False) as idle:
            setup.postgres.start()
            idle.wait_started()
            job = finished(setup, [one, two])

    assert_done_once(setup, job)
    no_traceback(one, two)


@dataclass
class Stalling:
    """An edit that takes the database down; the last answer only once the test says."""

    postgres: Cluster
    stopped: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)
    calls: int = 0

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        self.calls += 1
        last = body["messages"][-1]["content"]
        if isinstance(last, str) or not any(b.get("type") == "tool_result" for b in last):
            if not self.stopped.is_set():
                self.postgres.stop()
                self.stopped.set()
            edit = {"command": "echo done >> notes.md"}
            return Reply([tool_use(f"toolu_{self.calls}", "bash", edit)], "tool_use", usage=USAGE)
        self.resume.wait(timeout=300)
        return Reply([text("Appended a line to notes.md.")], usage=USAGE)


def test_a_job_running_through_the_outage_keeps_its_lease_and_runs_once(
    setup: Setup, tmp_path: Path
) -> None:
    """Every lease runs out while the database is away. Once it is back, the worker
    renews its running job's lease rather than sweep it: the job goes on, not again."""
    model = setup.model = Stalling(setup.postgres)
    log = tmp_path / "worker.log"

    async def renewed_and_kept() -> Job:
        async with PostgresQueue(setup.url, listen=False) as queue:
            while True:
                job = await queue.get(setup.job_id)
                assert job is not None
                assert job.state is JobState.RUNNING, job
                if job.lease_expires_at is not None and job.lease_expires_at > time.time():
                    break
                await asyncio.sleep(0.2)
            # Two leases more: any sweep would have put it back by now.
            await asyncio.sleep(2 * LEASE)
            kept = await queue.get(setup.job_id)
            assert kept is not None
            return kept

    with neo_worker({**setup.env, "NEO_DATA_DIR": str(tmp_path / "host")}, log):
        until("the database down mid-run", model.stopped.is_set, [log])
        until("a heartbeat failed", lambda: bool(events(log, "heartbeat_failed")), [log])
        time.sleep(2 * LEASE)  # the lease has run out
        setup.postgres.start()
        kept = asyncio.run(asyncio.wait_for(renewed_and_kept(), 120))
        model.resume.set()
        job = finished(setup, [log])

    assert (kept.state, kept.attempts) == (JobState.RUNNING, 1)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.attempts == 1
    assert model.calls == 2
    assert pushes(setup) == 1
    assert events(log, "lease_lost") == []
    no_traceback(log)
