"""`@neo review` end to end: the worker, the real SqliteQueue, githubkit against the fake
GitHub (whose reviews API refuses a line outside the diff, as GitHub does), the git CLI
against the fake git server, the anthropic SDK against the fake Messages API, and the
local sandbox (one test: the Docker sandbox, with the image scripts/build-images makes)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import pytest
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.github.models import ReviewThread
from bot.jobs import Conclusion, JobKind, JobRequest, Thread, TriggerKind
from bot.queue import SqliteQueue
from bot.worker.prompt import InlineComment, Post, ReviewLocation
from bot.worker.review import all_folded, fixed_threads, review_payload, unrepeated
from runner.review import InlineDraft, ReviewDraft
from runner.sandbox.docker import LABEL_JOB, LABEL_OWNER, owner_label
from tests.bot.worker.test_loop import (
    INSTALLATION,
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    enqueue,
    finished,
    get,
    git,
    git_server,
    github,
    origin,
    prompt_of,
    queue,
    run_until,
    settings,
    worker,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, make_pull_request, text, tool_use

__all__ = [
    "anthropic_env",
    "app",
    "clock",
    "git_server",
    "github",
    "origin",
    "queue",
    "settings",
]

APP_PY = b"def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
SUGGESTION = "Subtraction where the name says addition.\n\n```suggestion\n    return a + b\n```"


def open_pull(github: FakeGitHub, origin: Path, *, fork: bool) -> int:
    """A pull request adding app.py, its head only at refs/pull/N/head (as a fork's is)."""
    number = github.add_pull(
        REPO,
        "Add arithmetic",
        "Adds add() and sub().",
        head="arith",
        user="outsider",
        head_repository="outsider/hello" if fork else None,
    )
    make_pull_request(origin, number, {"app.py": APP_PY})
    # What GitHub shows as the pull request's diff: from where it left main.
    github.set_pull_diff(REPO, number, git(origin, "diff", f"main...refs/pull/{number}/head"))
    return number


def review_request(number: int, comment: int) -> JobRequest:
    return JobRequest(
        kind=JobKind.REVIEW,
        thread=Thread(REPO, number, is_pull_request=True),
        installation_id=INSTALLATION,
        event="issue_comment.created",
        trigger=TriggerKind("issue_comment.created"),
        trigger_id=comment,
        author="mona",
        author_association="COLLABORATOR",
        instruction="@neo review",
        dedupe_key=f"comment:{comment}",
        delivery_id="d1",
    )


def comment_call(call_id: str, line: int, body: str, **more: Any) -> dict[str, Any]:
    return tool_use(
        call_id, "review_comment", {"path": "app.py", "line": line, "body": body, **more}
    )


def script_review(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply([tool_use("t0", "bash", {"command": "cat app.py"})], "tool_use"),
        Reply(
            [
                comment_call("t1", 2, SUGGESTION),
                comment_call("t2", 5, "`sub` has no test.", start_line=4),
                comment_call("t3", 6, "Fine, but a docstring would help."),
                tool_use(
                    "t4",
                    "review_comment",
                    {"path": "README.md", "line": 1, "body": "Mention app.py."},
                ),
                comment_call("t5", 1, "Already said."),
            ],
            "tool_use",
        ),
        Reply([text("Two small functions; add() subtracts.")]),
    )


def refs(origin: Path) -> str:
    return git(origin, "for-each-ref", "--format=%(refname) %(objectname)")


def bot_reviews(github: FakeGitHub, number: int) -> list[dict[str, Any]]:
    return [r for r in github.reviews(REPO, number) if r["user"] == github.bot_login]


async def test_a_review_arrives_as_one_review_inline_with_a_suggestion_and_nothing_is_pushed(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = open_pull(github, origin, fork=True)
    earlier = github.add_review_comment(
        REPO, number, "Already said.", user="mona", path="app.py", line=1
    )
    comment = github.add_comment(REPO, number, "@neo review", user="mona")
    script_review(fake_anthropic)
    before = refs(origin)
    job_id = await enqueue(queue, review_request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS, job.result
    # The fork's head was fetched on the host: the model read its file in the tree.
    tool_result = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert "return a - b" in str(tool_result["content"])
    # The model got the diff, the changed files and the earlier comment.
    prompt = prompt_of(fake_anthropic)
    assert "+    return a - b" in prompt
    assert "- `app.py`" in prompt
    assert "Already said." in prompt
    assert "review_comment" in [t["name"] for t in fake_anthropic.requests[0].body["tools"]]

    reviews = bot_reviews(github, number)
    assert len(reviews) == 1
    review = reviews[0]
    assert review["state"] == "COMMENTED"
    inline = [(c["path"], c["start_line"], c["line"], c["body"]) for c in review["comments"]]
    assert inline == [
        ("app.py", None, 2, SUGGESTION),
        ("app.py", 4, 5, "`sub` has no test."),
        ("app.py", None, 6, "Fine, but a docstring would help."),
    ]
    assert "```suggestion\n    return a + b\n```" in review["comments"][0]["body"]
    # The comment outside the diff is in the summary; the repeat of the earlier one nowhere.
    assert "Two small functions; add() subtracts." in review["body"]
    assert "`README.md:1` (not a line of this diff): Mention app.py." in review["body"]
    assert "Already said." not in review["body"]
    assert [c["id"] for r in github.reviews(REPO, number) for c in r["comments"]].count(
        earlier
    ) == 1

    # Read-only: no ref moved, no pull request opened; the report links the review.
    assert refs(origin) == before
    assert len(github.pulls(REPO)) == 1
    report = bot_comments(github, number)[-1]["body"]
    assert f"#pullrequestreview-{review['id']}" in report
    assert "3 inline comments" in report
    # A review changes no code: nothing to say of what was verified.
    assert "What was verified" not in report


@pytest.fixture
def docker_client() -> Iterator[DockerClient]:
    """The local engine with the sandbox image; its absence fails the test, never skips it."""
    try:
        client = docker.from_env()
        client.ping()
        client.images.get("neo-sandbox:local")
    except ImageNotFound:
        pytest.fail("neo-sandbox:local is missing: build it with scripts/build-images")
    except DockerException as error:
        pytest.fail(f"the Docker engine is not reachable ({error}): run scripts/ensure-docker")
    yield client
    client.close()


async def test_a_review_in_the_docker_sandbox_arrives_inline_and_leaves_nothing_behind(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    docker_client: DockerClient,
) -> None:
    number = open_pull(github, origin, fork=True)
    comment = github.add_comment(REPO, number, "@neo review", user="mona")
    script_review(fake_anthropic)
    before = refs(origin)
    job_id = await enqueue(queue, review_request(number, comment))
    docker_settings = settings.model_copy(update={"sandbox": "docker"})

    await run_until(worker(queue, app, docker_settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS, job.result
    # The model's `cat` ran in the offline container, on the fork's head the host fetched.
    system = [block["text"] for block in fake_anthropic.requests[0].body["system"]]
    assert "Network: none." in system[-1]
    tool_result = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert "return a - b" in str(tool_result["content"])
    [review] = bot_reviews(github, number)
    assert [(c["path"], c["line"]) for c in review["comments"]] == [
        ("app.py", 2),
        ("app.py", 5),
        ("app.py", 6),
        ("app.py", 1),
    ]
    assert "`README.md:1` (not a line of this diff)" in review["body"]
    assert refs(origin) == before
    assert len(github.pulls(REPO)) == 1
    assert f"#pullrequestreview-{review['id']}" in bot_comments(github, number)[-1]["body"]
    # What `neo action` makes its review_url output of.
    assert str(job.result.review_url).endswith(f"#pullrequestreview-{review['id']}")
    mine: dict[str, str | list[str] | bool] = {
        "label": [f"{LABEL_JOB}=job-{job_id}", f"{LABEL_OWNER}={owner_label()}"]
    }
    assert docker_client.containers.list(all=True, filters=mine) == []
    assert not (settings.data_dir / "workspaces" / f"job-{job_id}").exists()


async def test_when_github_refuses_the_inline_comments_they_go_into_the_one_review_summary(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = open_pull(github, origin, fork=False)
    # GitHub's diff has moved on from the head the host fetched: no line of it is commentable.
    github.set_pull_diff(REPO, number, "")
    comment = github.add_comment(REPO, number, "@neo review", user="mona")
    script_review(fake_anthropic)
    job_id = await enqueue(queue, review_request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS, job.result
    reviews = bot_reviews(github, number)
    assert len(reviews) == 1
    assert reviews[0]["comments"] == []
    body = reviews[0]["body"]
    assert "`app.py:2` (not a line of this diff): Subtraction" in body
    assert "`app.py:4-5` (not a line of this diff): `sub` has no test." in body
    assert "`README.md:1`" in body
    refused = [r for r in github.requests if r.method == "POST" and r.path.endswith("/reviews")]
    assert len(refused) == 2  # the inline review refused with 422, then the folded one


async def test_a_review_request_on_an_issue_fails_with_one_line_and_no_model_call(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "An issue", "Not a pull request.", user="mona")
    comment = github.add_comment(REPO, number, "@neo review", user="mona")
    request = replace(review_request(number, comment), thread=Thread(REPO, number))
    job_id = await enqueue(queue, request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.FAILED
    assert job.result.error == "config_error: only a pull request can be reviewed"
    assert fake_anthropic.requests == []


# --- the review as it goes to GitHub (pure)


def earlier_comment(path: str, line: int | None, body: str) -> InlineComment:
    return InlineComment(
        post=Post(author="mona", association="MEMBER", body=body),
        location=ReviewLocation(path=path, line=line, diff_hunk="@@ -1 +1 @@"),
    )


def test_comments_an_earlier_review_made_are_dropped_inline_and_folded() -> None:
    draft = ReviewDraft(
        summary="s",
        comments=(
            InlineDraft(path="a.py", line=1, body="Same."),
            InlineDraft(path="a.py", line=2, body="Same."),  # another line: a new point
        ),
        folded=(InlineDraft(path="b.py", line=9, body=" Old. "),),
    )
    earlier = [earlier_comment("a.py", 1, "Same.\n"), earlier_comment("b.py", 9, "Old.")]
    kept = unrepeated(draft, earlier)
    assert kept.comments == (InlineDraft(path="a.py", line=2, body="Same."),)
    assert kept.folded == ()


def test_the_payload_neutralises_pings_but_keeps_suggestions() -> None:
    draft = ReviewDraft(
        summary="Ping @octocat. Fixes #3.",
        comments=(
            InlineDraft(path="a.py", line=2, body="@mona look\n\n```suggestion\nx = 1\n```"),
        ),
    )
    body, comments = review_payload(draft)
    assert "@octocat" not in body
    assert "```suggestion\nx = 1\n```" in str(comments[0]["body"])
    assert "@mona" not in str(comments[0]["body"])
    folded = all_folded(draft)
    assert folded.comments == ()
    assert "`a.py:2` (not a line of this diff)" in folded.body()


# --- a later review: Neo's threads the new commits fixed are resolved

FIXED_PY = APP_PY.replace(b"def add(a, b):\n    return a - b", b"def add(a, b):\n    return a + b")


def push_to_pull(github: FakeGitHub, origin: Path, number: int, app_py: bytes) -> None:
    """The pull request's head becomes `app_py`, in git and in what GitHub diffs and shows."""
    make_pull_request(origin, number, {"app.py": app_py})
    github.set_pull_diff(REPO, number, git(origin, "diff", f"main...refs/pull/{number}/head"))
    github.put_file(REPO, "app.py", app_py.decode(), ref="arith")


@pytest.mark.parametrize("sandbox", ["local", "docker"])
async def test_a_later_review_resolves_only_neos_threads_whose_lines_changed_and_repeats_nothing(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    sandbox: str,
    request: pytest.FixtureRequest,
) -> None:
    if sandbox == "docker":
        request.getfixturevalue("docker_client")  # fails, never skips, with no engine
    settings = settings.model_copy(update={"sandbox": sandbox})
    number = open_pull(github, origin, fork=False)
    github.put_file(REPO, "app.py", APP_PY.decode(), ref="arith")
    human = github.add_review_comment(
        REPO, number, "add() looks off to me too.", user="mona", path="app.py", line=2
    )
    first = github.add_comment(REPO, number, "@neo review", user="mona")
    script_review(fake_anthropic)
    first_job = await enqueue(queue, review_request(number, first))
    await run_until(worker(queue, app, settings), finished(queue, first_job))
    [first_review] = bot_reviews(github, number)
    by_line = {c["line"]: c["id"] for c in first_review["comments"]}
    assert sorted(by_line) == [1, 2, 5, 6]
    assert github.resolved_threads(REPO) == set()  # nothing had changed yet

    push_to_pull(github, origin, number, FIXED_PY)  # fixes line 2, leaves 1 and 4-6 as they were
    second = github.add_comment(REPO, number, "@neo review", user="mona")
    fake_anthropic.script(
        Reply([comment_call("t1", 6, "Fine, but a docstring would help.")], "tool_use"),
        Reply([text("add() adds now.")]),
    )
    second_job = await enqueue(queue, replace(review_request(number, second), delivery_id="d2"))
    await run_until(worker(queue, app, settings), finished(queue, second_job))

    job = await get(queue, second_job)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS, job.result
    # Only Neo's thread on the changed line; the human's on it and Neo's on unchanged lines stay.
    assert github.resolved_threads(REPO) == {f"PRRT_{by_line[2]}"}
    assert f"PRRT_{human}" not in github.resolved_threads(REPO)
    later = bot_reviews(github, number)[-1]
    assert later["id"] != first_review["id"]
    assert later["comments"] == []  # the docstring point was made already
    assert "add() adds now." in later["body"]
    report = bot_comments(github, number)[-1]["body"]
    assert "resolved 1 earlier thread of Neo's whose lines changed" in report
    assert "0 inline comments" in report


def test_only_the_bots_open_outdated_threads_are_fixed() -> None:
    def thread(name: str, author: str, *, outdated: bool = True, resolved: bool = False) -> Any:
        return ReviewThread(name, resolved, outdated, author, "b", "a.py", None)

    threads = [
        thread("mine", "neo"),
        thread("human", "mona"),
        thread("unchanged", "neo", outdated=False),
        thread("done", "neo", resolved=True),
        thread("namesake", "neo[bot]"),  # GraphQL never says "[bot]": not the bot's
    ]
    assert fixed_threads(threads, "neo[bot]") == ("mine",)


async def test_a_failed_thread_sweep_costs_nothing_but_the_sweep(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = open_pull(github, origin, fork=False)
    github.put_file(REPO, "app.py", APP_PY.decode(), ref="arith")
    first = github.add_comment(REPO, number, "@neo review", user="mona")
    script_review(fake_anthropic)
    first_job = await enqueue(queue, review_request(number, first))
    await run_until(worker(queue, app, settings), finished(queue, first_job))

    push_to_pull(github, origin, number, FIXED_PY)
    # GitHub refuses the GraphQL call that lists the threads, as it does a token without
    # the grant; `times` outlasts any retry, so no later call gets through either.
    github.fail_next(
        "POST", "/graphql", 403, message="Resource not accessible by integration", times=10
    )
    second = github.add_comment(REPO, number, "@neo review", user="mona")
    fake_anthropic.script(Reply([text("add() adds now.")]))
    second_job = await enqueue(queue, replace(review_request(number, second), delivery_id="d2"))
    await run_until(worker(queue, app, settings), finished(queue, second_job))

    job = await get(queue, second_job)
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS, job.result
    assert job.result.review_url is not None
    assert len(bot_reviews(github, number)) == 2  # the review went, the sweep did not
    assert github.resolved_threads(REPO) == set()
    refused = [r for r in github.requests if r.route == "/graphql" and r.status == 403]
    assert refused  # the sweep was tried, after the review
    assert "resolved" not in bot_comments(github, number)[-1]["body"]
