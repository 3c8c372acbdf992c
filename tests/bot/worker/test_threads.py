"""`@neo` on the review threads of Neo's own pull request, end to end: the worker, the
real SqliteQueue, githubkit against the fake GitHub (review replies, GraphQL threads),
the git CLI against the fake git server, the anthropic SDK against the fake Messages
API; the local sandbox, and once the Docker sandbox."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from docker import DockerClient

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import Conclusion, JobKind, JobOutcome, JobRequest, JobState, Thread, TriggerKind
from bot.queue import SqliteQueue
from bot.worker.loop import Worker
from tests.bot.worker.test_loop import (
    INSTALLATION,
    LEASE,
    REPO,
    _Clock,
    _DiesBeforeFinishing,
    anthropic_env,
    app,
    clock,
    conversation,
    enqueue,
    finished,
    get,
    git,
    git_server,
    github,
    origin,
    queue,
    request,
    run_until,
    script_edit,
    settings,
    worker,
)
from tests.bot.worker.test_review import docker_client
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text, tool_use

__all__ = [
    "anthropic_env",
    "app",
    "clock",
    "docker_client",
    "git_server",
    "github",
    "origin",
    "queue",
    "settings",
]


async def neo_pull(
    queue: SqliteQueue, w: Worker, github: FakeGitHub, fake: FakeAnthropicAPI
) -> tuple[int, int]:
    """Issue N, and the pull request Neo opened for it from `neo/issue-N`: both numbers."""
    issue = github.add_issue(REPO, "Say hello in the README", user="mona")
    comment = github.add_comment(REPO, issue, "@neo add a line to the README", user="mona")
    script_edit(fake)
    job_id = await enqueue(queue, request(issue, comment))
    await run_until(w, finished(queue, job_id))
    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    [pull] = github.pulls(REPO)
    assert pull["user"]["login"] == github.bot_login
    return issue, int(pull["number"])


def on_pull(number: int, event: str, trigger: int, instruction: str) -> JobRequest:
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(REPO, number, is_pull_request=True),
        installation_id=INSTALLATION,
        event=event,
        trigger=TriggerKind(event),
        trigger_id=trigger,
        author="mona",
        author_association="COLLABORATOR",
        instruction=instruction,
        dedupe_key=f"{event}:{trigger}",
        delivery_id=f"d-{trigger}",
    )


def script_goodbye(fake: FakeAnthropicAPI, summary: str = "Added a goodbye line.") -> None:
    edit = {
        "path": "README.md",
        "old_string": "Edited by Neo.\n",
        "new_string": "Edited by Neo.\nGoodbye.\n",
    }
    fake.script(Reply([tool_use("g1", "edit_file", edit)], "tool_use"), Reply([text(summary)]))


def replies(github: FakeGitHub, comment: int) -> list[dict[str, Any]]:
    return [r for r in github.thread_replies(REPO, comment) if r["user"] == github.bot_login]


async def test_a_review_comment_continues_the_issues_session_pushes_answers_and_resolves(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    w = worker(queue, app, settings)
    issue, number = await neo_pull(queue, w, github, fake_anthropic)
    asked = len(fake_anthropic.requests)
    first_conversation = conversation(fake_anthropic, asked - 1)
    other = github.add_review_comment(REPO, number, "Unrelated.", user="mona", line=1)
    comment = github.add_review_comment(
        REPO, number, "@neo say goodbye after this", user="mona", line=3
    )
    script_goodbye(fake_anthropic)
    event = "pull_request_review_comment.created"
    job_id = await enqueue(queue, on_pull(number, event, comment, "@neo say goodbye after this"))

    await run_until(w, finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    # The issue's session went on: its whole conversation, then the review comment.
    resumed = conversation(fake_anthropic, asked)
    assert resumed[: len(first_conversation)] == first_conversation
    assert "say goodbye after this" in str(resumed[-1])
    # Pushed to the pull request's own branch; no second pull request.
    branch = f"refs/heads/neo/issue-{issue}"
    sha = git(origin, "rev-parse", branch)
    assert git(origin, "show", f"{branch}:README.md") == "# fixture\n\nEdited by Neo.\nGoodbye."
    assert len(github.pulls(REPO)) == 1
    # One reply in that thread, with the commit; that thread resolved, the other not.
    [reply] = replies(github, comment)
    assert f"/commits/{sha})" in reply["body"]
    assert "Added a goodbye line." in reply["body"]
    assert replies(github, other) == []
    assert github.resolved_threads(REPO) == {f"PRRT_{comment}"}
    # No extra issue-level comment: the job's report, which counts the answer.
    mine = [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]
    assert len(mine) == 1
    assert "Answered in 1 review thread; resolved 1." in mine[0]["body"]


async def test_a_reply_to_a_reply_is_answered_in_its_thread(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    w = worker(queue, app, settings)
    _, number = await neo_pull(queue, w, github, fake_anthropic)
    top = github.add_review_comment(REPO, number, "Is this line right?", user="alice")
    asking = github.add_review_comment(
        REPO, number, "@neo fix it then", user="mona", in_reply_to=top
    )
    script_goodbye(fake_anthropic)
    event = "pull_request_review_comment.created"
    job_id = await enqueue(queue, on_pull(number, event, asking, "@neo fix it then"))

    await run_until(w, finished(queue, job_id))

    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    assert len(replies(github, top)) == 1
    assert github.resolved_threads(REPO) == {f"PRRT_{top}"}


async def test_a_run_that_pushes_nothing_answers_once_even_retried_and_leaves_it_open(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    clock: _Clock,
) -> None:
    _, number = await neo_pull(
        queue, queue_worker := worker(queue, app, settings), github, fake_anthropic
    )
    del queue_worker
    comment = github.add_review_comment(REPO, number, "@neo why a README line?", user="mona")
    answer = "The issue asked for a line in the README; nothing else needed changing."
    fake_anthropic.script(Reply([text(answer)]))
    fake_anthropic.script(Reply([text(answer)]))
    event = "pull_request_review_comment.created"
    job_id = await enqueue(queue, on_pull(number, event, comment, "@neo why a README line?"))
    before = git(origin, "for-each-ref")
    dying = _DiesBeforeFinishing(queue)

    async def died() -> bool:
        return dying.died

    await run_until(worker(dying, app, settings, name="first"), died)
    assert len(replies(github, comment)) == 1
    clock.now += LEASE + 1  # nobody heartbeats the dead worker's lease
    await run_until(worker(queue, app, settings, name="second"), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.attempts == 2
    [reply] = replies(github, comment)
    assert answer in reply["body"]
    assert "Pushed" not in reply["body"]
    assert git(origin, "for-each-ref") == before
    assert github.resolved_threads(REPO) == set()


async def changes_requested_with_two_comments(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake: FakeAnthropicAPI,
) -> tuple[int, int, int]:
    """A changes-requested review with two inline comments on Neo's pull request, answered."""
    w = worker(queue, app, settings)
    _, number = await neo_pull(queue, w, github, fake)
    review = github.add_review(REPO, number, "", user="mona")
    one = github.add_review_comment(
        REPO, number, "Say goodbye here.", user="mona", line=3, review_id=review
    )
    two = github.add_review_comment(
        REPO, number, "And mention it once.", user="mona", line=2, review_id=review
    )
    script_goodbye(fake, "Added the goodbye, once.")
    event = "pull_request_review.submitted"
    job_id = await enqueue(
        queue, replace(on_pull(number, event, review, ""), dedupe_key=f"review:{review}")
    )
    await run_until(worker(queue, app, settings), finished(queue, job_id))
    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    # The inline comments were the instruction.
    assert "Say goodbye here." in str(conversation(fake, len(fake.requests) - 1))
    return number, one, two


async def test_a_changes_requested_review_gets_each_thread_answered_and_resolved(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    _, one, two = await changes_requested_with_two_comments(
        queue, app, settings, github, fake_anthropic
    )
    assert [len(replies(github, c)) for c in (one, two)] == [1, 1]
    assert "Added the goodbye, once." in replies(github, two)[0]["body"]
    assert github.resolved_threads(REPO) == {f"PRRT_{one}", f"PRRT_{two}"}


async def test_on_the_docker_sandbox_the_threads_are_answered_and_resolved(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    docker_client: DockerClient,
) -> None:
    docker_settings = settings.model_copy(update={"sandbox": "docker"})
    _, one, two = await changes_requested_with_two_comments(
        queue, app, docker_settings, github, fake_anthropic
    )
    system = [block["text"] for block in fake_anthropic.requests[-1].body["system"]]
    assert "Network: none." in system[-1]
    assert [len(replies(github, c)) for c in (one, two)] == [1, 1]
    assert github.resolved_threads(REPO) == {f"PRRT_{one}", f"PRRT_{two}"}


async def test_a_human_pull_requests_review_comment_gets_no_thread_reply(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_pull(REPO, "Tweak", head="main", user="mona")
    comment = github.add_review_comment(REPO, number, "@neo what does this do?", user="mona")
    fake_anthropic.script(Reply([text("It prints the fixture's name.")]))
    event = "pull_request_review_comment.created"
    job_id = await enqueue(queue, on_pull(number, event, comment, "@neo what does this do?"))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    assert replies(github, comment) == []


async def test_a_pull_request_job_waits_while_the_issues_job_holds_their_session(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    w = worker(queue, app, settings)
    issue, number = await neo_pull(queue, w, github, fake_anthropic)
    # A follow-up on the issue, running on another host and holding the issue's session.
    follow_up = github.add_comment(REPO, issue, "@neo and a third line", user="mona")
    elsewhere = await enqueue(queue, request(issue, follow_up, delivery="d-elsewhere"))
    claimed = await queue.claim("elsewhere", LEASE)
    assert claimed is not None
    assert claimed.id == elsewhere
    assert await queue.hold_session(elsewhere, "elsewhere", Thread(REPO, issue).key)
    asked = len(fake_anthropic.requests)
    comment = github.add_review_comment(REPO, number, "@neo say goodbye", user="mona", line=3)
    script_goodbye(fake_anthropic)
    event = "pull_request_review_comment.created"
    job_id = await enqueue(queue, on_pull(number, event, comment, "@neo say goodbye"))

    running = asyncio.create_task(run_until(w, finished(queue, job_id)))

    def waiting() -> bool:
        return any(
            "waiting for another job on this conversation" in c["body"]
            for c in github.comments(REPO, number)
            if c["user"]["login"] == github.bot_login
        )

    while not waiting():
        assert not running.done(), running
        await asyncio.sleep(0.05)
    # The session is the other job's: no model call, nothing pushed yet.
    assert len(fake_anthropic.requests) == asked
    await queue.finish(elsewhere, "elsewhere", JobOutcome(conclusion=Conclusion.SUCCESS))
    await running

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert len(fake_anthropic.requests) > asked
    assert "Goodbye." in git(origin, "show", f"refs/heads/neo/issue-{issue}:README.md")
