"""A job's GitHub effects through a real githubkit client against the fake GitHub."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

from bot.github.app import GitHubApp
from bot.github.client import (
    GitHubError,
    RepoClient,
    RetryPolicy,
    Spacers,
    job_marker,
    reply_marker,
)
from tests.fakes import FakeGitHub
from tests.fakes.github_api import Call

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import IssueComment

INSTALLATION = 7
REPO = "octo/hello"
COMMENTS = "/repos/{owner}/{repo}/issues/{number}/comments"


class FakeTime:
    """Monotonic and wall clocks that only `sleep` moves; every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.install(INSTALLATION, "octo", ["hello"])
    fake.set_permission(REPO, "alice", "write")
    with fake:
        yield fake


@pytest.fixture
def issue(github: FakeGitHub) -> int:
    return github.add_issue(REPO, "Export needs --json", "please", user="alice")


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app:
        yield app


@pytest.fixture
def spacers(fake_time: FakeTime) -> Spacers:
    return Spacers(clock=fake_time.clock, sleep=fake_time.sleep)


async def _publisher(
    app: GitHubApp, number: int, fake_time: FakeTime, spacers: Spacers, **options: Any
) -> RepoClient:
    return await RepoClient.for_installation(
        app,
        INSTALLATION,
        REPO,
        number,
        spacers=spacers,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
        now=fake_time.clock,
        **options,
    )


@pytest.fixture
async def publisher(
    app: GitHubApp, issue: int, fake_time: FakeTime, spacers: Spacers
) -> RepoClient:
    return await _publisher(app, issue, fake_time, spacers)


def _calls(github: FakeGitHub) -> list[tuple[str, str, int]]:
    return [(r.method, r.route, r.status) for r in github.requests if r.route.startswith("/repos")]


# --- the progress comment -------------------------------------------------------------


async def test_progress_comment_is_found_again_for_the_same_job_and_edited(
    app: GitHubApp,
    github: FakeGitHub,
    publisher: RepoClient,
    issue: int,
    fake_time: FakeTime,
    spacers: Spacers,
) -> None:
    github.add_comment(REPO, issue, f"quoting {job_marker(41)}", user="alice")  # not the bot's

    first = await publisher.progress_comment(41, f"{job_marker(41)}\nWorking…")
    # A retried job: a new RepoClient, nothing remembered in memory.
    retried = await _publisher(app, issue, fake_time, spacers)
    again = await retried.progress_comment(41, f"{job_marker(41)}\nWorking…")
    other = await retried.progress_comment(42, "Working on job 42")
    edited = await retried.update_progress(first, f"{job_marker(41)}\nDone: #7")
    unchanged = await retried.update_progress(first, f"{job_marker(41)}\nDone: #7")

    comments = github.comments(REPO, issue)
    assert again == first
    assert other != first
    assert [c["id"] for c in comments][1:] == [first, other]
    assert comments[1]["user"]["login"] == "neo-test[bot]"
    assert comments[1]["body"] == f"{job_marker(41)}\nDone: #7"
    # A body without the marker gets it, so the next attempt can find it.
    assert comments[2]["body"] == f"{job_marker(42)}\nWorking on job 42"
    assert (edited, unchanged) == (True, False)
    posts = [c for c in _calls(github) if c[0] != "GET"]
    assert [c[0] for c in posts] == ["POST", "POST", "PATCH"]


async def test_find_progress_comment_finds_the_jobs_comment_and_never_creates_one(
    app: GitHubApp,
    github: FakeGitHub,
    publisher: RepoClient,
    issue: int,
    fake_time: FakeTime,
    spacers: Spacers,
) -> None:
    github.add_comment(REPO, issue, f"{job_marker(5)}\nforged", user="alice")  # not the bot's
    made = await publisher.progress_comment(5, "Working")
    await publisher.progress_comment(51, "Working on 51")
    fresh = await _publisher(app, issue, fake_time, spacers)

    assert await fresh.find_progress_comment(5) == made
    assert await fresh.find_progress_comment(6) is None
    assert len(github.comments(REPO, issue)) == 3
    assert [c[0] for c in _calls(github) if c[0] != "GET"] == ["POST", "POST"]


async def test_the_comment_list_is_paged_through(
    app: GitHubApp,
    github: FakeGitHub,
    publisher: RepoClient,
    issue: int,
    fake_time: FakeTime,
    spacers: Spacers,
) -> None:
    for n in range(120):
        github.add_comment(REPO, issue, f"chatter {n}", user="alice")
    mine = await publisher.progress_comment(1, "first")

    fresh = await _publisher(app, issue, fake_time, spacers)
    found = await fresh.progress_comment(1, "first")

    assert found == mine
    pages = [r.path for r in github.requests if r.method == "GET" and "comments" in r.route]
    assert len(pages) == 4  # two pages before creating, two to find it again
    assert [c["id"] for c in github.comments(REPO, issue)][-1] == mine


async def test_reply_once_posts_one_reply_per_thread_and_key(
    github: FakeGitHub, publisher: RepoClient, issue: int
) -> None:
    other_issue = github.add_issue(REPO, "Another")

    first = await publisher.reply_once(issue, "unauthorised", "Only writers can ask Neo.")
    second = await publisher.reply_once(issue, "unauthorised", "Only writers can ask Neo.")
    elsewhere = await publisher.reply_once(other_issue, "unauthorised", "Only writers can ask Neo.")

    assert first == second
    assert elsewhere != first
    bodies = [c["body"] for c in github.comments(REPO, issue)]
    assert bodies == [f"{reply_marker('unauthorised')}\nOnly writers can ask Neo."]
    assert len(github.comments(REPO, other_issue)) == 1


# --- reactions, permissions, files ---------------------------------------------------


async def test_react_on_a_comment_a_review_comment_and_the_issue(
    github: FakeGitHub, publisher: RepoClient, issue: int
) -> None:
    comment = github.add_comment(REPO, issue, "@neo fix it")
    review = github.add_review_comment(REPO, issue, "@neo rename this")

    await publisher.react("comment", comment)
    await publisher.react("review_comment", review)
    await publisher.react("issue", issue)
    await publisher.react("issue", issue)  # already there: GitHub answers 200

    reactions = [
        (r["subject"], r["subject_id"], r["content"], r["user"]) for r in github.reactions(REPO)
    ]
    assert reactions == [
        ("issue_comment", comment, "eyes", "neo-test[bot]"),
        ("review_comment", review, "eyes", "neo-test[bot]"),
        ("issue", issue, "eyes", "neo-test[bot]"),
    ]
    assert [c[2] for c in _calls(github)] == [201, 201, 201, 200]


async def test_permission_levels_are_cached_briefly(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime
) -> None:
    for login, role in [("maia", "maintain"), ("tri", "triage"), ("root", "admin")]:
        github.set_permission(REPO, login, role)

    levels = [await publisher.permission(u) for u in ("alice", "maia", "tri", "root", "mallory")]
    github.set_permission(REPO, "alice", "read")
    cached = await publisher.permission("ALICE")
    fake_time.now += 61
    fresh = await publisher.permission("alice")

    assert levels == ["write", "maintain", "triage", "admin", "none"]
    assert (cached, fresh) == ("write", "read")
    assert len([c for c in _calls(github) if "/permission" in c[1]]) == 6


async def test_read_file_and_default_branch(github: FakeGitHub, publisher: RepoClient) -> None:
    github.set_default_branch(REPO, "trunk")
    github.put_file(REPO, ".github/neo.yml", "max_turns: 12\né\n")
    github.put_file(REPO, ".github/neo.yml", "max_turns: 99\n", ref="feature")

    assert await publisher.default_branch() == "trunk"
    assert await publisher.read_file(".github/neo.yml") == "max_turns: 12\né\n"
    assert await publisher.read_file(".github/neo.yml", "trunk") == "max_turns: 12\né\n"
    assert await publisher.read_file(".github/neo.yml", "feature") == "max_turns: 99\n"
    assert await publisher.read_file(".github/missing.yml") is None
    assert await publisher.read_file(".github") is None  # a directory is not a file


# --- the pull request -----------------------------------------------------------------


async def test_open_or_update_pr_creates_a_draft_once_then_updates_its_body(
    github: FakeGitHub, publisher: RepoClient, issue: int
) -> None:
    created = await publisher.open_or_update_pr(
        f"neo/issue-{issue}", "main", "Add --json", f"Fixes #{issue}"
    )
    updated = await publisher.open_or_update_pr(
        f"neo/issue-{issue}", "main", "Another title", f"Fixes #{issue}\n\nAlso docs."
    )
    unchanged = await publisher.open_or_update_pr(
        f"neo/issue-{issue}", "main", "Another title", f"Fixes #{issue}\n\nAlso docs."
    )

    assert created.created is True
    assert (updated.number, updated.created) == (created.number, False)
    assert unchanged == updated
    assert created.url.endswith(f"/octo/hello/pull/{created.number}")
    [pull] = github.pulls(REPO)
    assert pull["draft"] is True
    assert pull["head"]["ref"] == f"neo/issue-{issue}"
    assert pull["base"]["ref"] == "main"
    assert pull["title"] == "Add --json"  # a maintainer's title is left alone
    assert pull["body"] == f"Fixes #{issue}\n\nAlso docs."
    assert [c[0] for c in _calls(github) if c[0] != "GET"] == ["POST", "PATCH"]


async def test_a_create_that_loses_a_race_updates_the_winner(
    github: FakeGitHub, publisher: RepoClient
) -> None:
    first = await publisher.open_or_update_pr("neo/x", "main", "T", "one")
    # The next list misses the PR (say, a lagging replica): the create answers 422.
    lists = 0

    def lagging(call: Call) -> Any:
        nonlocal lists
        lists += 1
        return (200, []) if lists == 1 else github._list_pulls(call)

    github.add_route("GET", "/repos/{owner}/{repo}/pulls", lagging)

    second = await publisher.open_or_update_pr("neo/x", "main", "T", "two")

    assert (second.number, second.created) == (first.number, False)
    assert [p["body"] for p in github.pulls(REPO)] == ["two"]
    assert [c[2] for c in _calls(github) if c[0] == "POST"] == [201, 422]


# --- transient failures -------------------------------------------------------------


async def test_a_secondary_rate_limit_with_retry_after_is_waited_out_then_retried(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime, issue: int
) -> None:
    github.fail_next("POST", COMMENTS, 403, headers={"retry-after": "1"})

    comment = await publisher.progress_comment(5, "Working…")

    assert fake_time.sleeps == [1.0]
    assert [c["id"] for c in github.comments(REPO, issue)] == [comment]
    path = f"/repos/{REPO}/issues/{issue}/comments"
    assert _calls(github) == [
        ("GET", path, 200),
        ("POST", path, 403),
        ("GET", path, 200),  # a create is retried with its lookup
        ("POST", path, 201),
    ]


async def test_a_rate_limit_waits_until_x_ratelimit_reset(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime
) -> None:
    reset = int(fake_time.now) + 30
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    github.fail_next("GET", "/repos/{owner}/{repo}", 403, headers=headers, message="API rate limit")

    assert await publisher.default_branch() == "main"
    assert fake_time.sleeps == [30.0]


async def test_a_rate_limit_reset_beyond_the_cap_fails_without_waiting(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime
) -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(fake_time.now) + 3600)}
    github.fail_next("GET", "/repos/{owner}/{repo}", 403, headers=headers, message="API rate limit")

    with pytest.raises(GitHubError) as raised:
        await publisher.default_branch()

    assert str(raised.value) == (
        f"github 403 GET /repos/{REPO}: API rate limit (GitHub asks to wait 3600 s)"
    )
    assert fake_time.sleeps == []


async def test_502_twice_then_success(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime
) -> None:
    github.put_file(REPO, "AGENTS.md", "be brief")
    github.fail_next("GET", "/repos/{owner}/{repo}/contents/{path:path}", 502, times=2)

    assert await publisher.read_file("AGENTS.md") == "be brief"
    assert fake_time.sleeps == [1.0, 2.0]  # exponential backoff
    assert [c[2] for c in _calls(github)] == [502, 502, 200]  # githubkit retried nothing


async def test_retries_are_capped(
    app: GitHubApp, github: FakeGitHub, fake_time: FakeTime, spacers: Spacers, issue: int
) -> None:
    publisher = await _publisher(app, issue, fake_time, spacers, retry=RetryPolicy(max_attempts=3))
    github.fail_next("GET", "/repos/{owner}/{repo}", 503, times=10)

    with pytest.raises(GitHubError) as raised:
        await publisher.default_branch()

    assert str(raised.value) == f"github 503 GET /repos/{REPO}: Service Unavailable"
    assert raised.value.status == 503
    assert fake_time.sleeps == [1.0, 2.0]
    assert len(_calls(github)) == 3


async def test_a_404_is_one_line_without_the_token(
    app: GitHubApp, github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime
) -> None:
    with pytest.raises(GitHubError) as raised:
        await publisher.update_progress(999, "nothing")

    message = str(raised.value)
    assert message == f"github 404 PATCH /repos/{REPO}/issues/comments/999: Not Found"
    assert raised.value.kind == "github_error"
    token = (await app.installation_token(INSTALLATION, REPO)).token
    assert token not in message
    assert "ghs_" not in message
    assert "\n" not in message
    assert fake_time.sleeps == []


# --- spacing of mutating calls --------------------------------------------------------


async def test_mutating_calls_of_an_installation_are_spaced_and_reads_are_not(
    app: GitHubApp,
    github: FakeGitHub,
    publisher: RepoClient,
    fake_time: FakeTime,
    spacers: Spacers,
    issue: int,
) -> None:
    other_issue = github.add_issue(REPO, "Another")
    # Another job of the same installation shares the spacing.
    neighbour = await _publisher(app, other_issue, fake_time, spacers)

    await publisher.default_branch()
    await publisher.permission("alice")
    reads = list(fake_time.sleeps)
    await publisher.react("issue", issue)
    await neighbour.react("issue", other_issue)
    await publisher.reply_once(issue, "a", "one")
    burst = list(fake_time.sleeps)
    await neighbour.reply_once(other_issue, "b", "two")
    await publisher.react("issue", issue)

    assert reads == []
    # A burst of three goes at once, then one a second.
    assert burst == []
    assert fake_time.sleeps == [1.0, 1.0]
    # Another installation's spacing is its own.
    assert spacers.for_installation(8) is not spacers.for_installation(INSTALLATION)
    assert spacers.for_installation(INSTALLATION) is spacers.for_installation(INSTALLATION)


async def test_what_the_requester_waits_for_does_not_queue_behind_other_writes(
    github: FakeGitHub, publisher: RepoClient, fake_time: FakeTime, issue: int
) -> None:
    for _ in range(5):  # the installation's bucket used up, two calls booked ahead
        await publisher.react("issue", issue)
    booked = list(fake_time.sleeps)

    comment = await publisher.progress_comment(1, "working")
    await publisher.open_or_update_pr("neo/issue-1", "main", "T", "Fixes #1")
    await publisher.update_progress(comment, "the report", urgent=True)
    urgent = list(fake_time.sleeps)
    await publisher.update_progress(comment, "a live edit")

    assert booked == [1.0, 1.0]
    # The first comment, the pull request and the report go at once: a burst
    # of their own.
    assert urgent == booked
    # An ordinary call would have waited 1 s; it waits a second more for each.
    assert fake_time.sleeps == [1.0, 1.0, 1.0 + 3]
    assert github.comments(REPO, issue)[-1]["body"].endswith("a live edit")


# --- the fake's bodies are GitHub's -------------------------------------------------


async def test_githubkit_parses_the_fakes_issue_pull_and_comment_bodies(
    app: GitHubApp, github: FakeGitHub, publisher: RepoClient, issue: int
) -> None:
    pr = await publisher.open_or_update_pr("neo/issue-1", "main", "T", "Fixes #1")
    comment = await publisher.progress_comment(3, "hi")
    for n in range(3):
        github.add_comment(REPO, issue, f"n{n}")
    client = await app.installation_client(INSTALLATION, REPO)

    got_issue = (await client.rest.issues.async_get("octo", "hello", issue)).parsed_data
    pr_issue = (await client.rest.issues.async_get("octo", "hello", pr.number)).parsed_data
    pull = (await client.rest.pulls.async_get("octo", "hello", pr.number)).parsed_data
    got = (await client.rest.issues.async_get_comment("octo", "hello", comment)).parsed_data
    first_page = await client.rest.issues.async_list_comments(
        "octo", "hello", issue, per_page=2, page=1
    )
    last_page = await client.rest.issues.async_list_comments(
        "octo", "hello", issue, per_page=2, page=2
    )
    # githubkit's generated `list[...]` annotation confuses mypy: read the JSON ids.
    first_ids = [c.id for c in cast("list[IssueComment]", first_page.parsed_data)]
    paged = first_ids + [c.id for c in cast("list[IssueComment]", last_page.parsed_data)]

    assert (got_issue.title, got_issue.user and got_issue.user.login) == (
        "Export needs --json",
        "alice",
    )
    assert not got_issue.pull_request  # UNSET: GitHub sends none for a plain issue
    assert pr_issue.pull_request
    assert (pull.draft, pull.head.ref, pull.base.ref) == (True, "neo/issue-1", "main")
    assert pull.user is not None
    assert pull.user.login == "neo-test[bot]"
    assert got.html_url.endswith(f"#issuecomment-{comment}")
    assert paged == [c["id"] for c in github.comments(REPO, issue)]
    assert len(paged) == 4
    assert 'page=2>; rel="next"' in first_page.headers["link"]
    assert "link" not in last_page.headers


async def test_a_pull_requests_diff_review_comment_and_reviews_comments_parse(
    app: GitHubApp, github: FakeGitHub, fake_time: FakeTime, spacers: Spacers
) -> None:
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-é\n+è\n"
    number = github.add_pull(REPO, "Fix x", "body", head="fix-x", user="alice", diff=diff)
    review = github.add_review(REPO, number, "A few things", user="alice")
    one = github.add_review_comment(
        REPO, number, "here", path="src/x.py", line=9, diff_hunk="@@ -1,9 +1,9 @@", user="bob"
    )
    inline = [
        github.add_review_comment(REPO, number, "first", review_id=review, line=3),
        github.add_review_comment(
            REPO, number, "second", review_id=review, start_line=4, line=6, side="LEFT"
        ),
    ]
    publisher = await _publisher(app, number, fake_time, spacers)

    assert await publisher.pull_request_diff() == diff
    single = await publisher.read_review_comment(one)
    listed = await publisher.read_review_comments(review)

    assert (single.path, single.line, single.start_line, single.side) == (
        "src/x.py",
        9,
        None,
        "RIGHT",
    )
    assert single.diff_hunk == "@@ -1,9 +1,9 @@"
    assert (single.comment.author, single.comment.body) == ("bob", "here")
    assert [(c.comment.id, c.comment.body, c.line, c.start_line, c.side) for c in listed] == [
        (inline[0], "first", 3, None, "RIGHT"),
        (inline[1], "second", 6, 4, "LEFT"),
    ]
    # The diff was asked for by its media type.
    [asked] = [r for r in github.requests if r.route == f"/repos/{REPO}/pulls/{number}"]
    assert asked.status == 200


async def test_a_diff_github_finds_too_large_is_one_line(
    github: FakeGitHub, app: GitHubApp, fake_time: FakeTime, spacers: Spacers
) -> None:
    number = github.add_pull(REPO, "Huge", diff="x")
    message = "Sorry, the diff exceeded the maximum number of lines (20000)"
    github.fail_next("GET", "/repos/{owner}/{repo}/pulls/{number}", 406, message=message)
    publisher = await _publisher(app, number, fake_time, spacers)

    with pytest.raises(GitHubError) as caught:
        await publisher.pull_request_diff()

    assert caught.value.status == 406
    assert str(caught.value) == f"github 406 GET /repos/{REPO}/pulls/{number}: {message}"
    assert fake_time.sleeps == []


# --- faithful to GitHub ---------------------------------------------------------------


async def test_a_thread_of_more_than_a_hundred_comments_is_read_to_its_newest(
    github: FakeGitHub, publisher: RepoClient, issue: int
) -> None:
    for n in range(230):
        github.add_comment(REPO, issue, f"comment {n}", user="alice")
    trigger = github.add_comment(REPO, issue, "@neo please", user="bob")

    thread = await publisher.read_thread(pull_request=False)

    assert thread.issue.title == "Export needs --json"
    assert [c.body for c in thread.comments[:2]] == ["comment 0", "comment 1"]
    assert (thread.comments[-1].id, thread.comments[-1].author) == (trigger, "bob")
    assert len(thread.comments) == 231
    pages = [r.path for r in github.requests if r.route.endswith(f"/issues/{issue}/comments")]
    assert len(pages) == 3  # followed Link: rel="next" twice


async def test_a_pull_requests_thread_carries_the_pull(
    github: FakeGitHub, app: GitHubApp, fake_time: FakeTime, spacers: Spacers
) -> None:
    number = github.add_pull(REPO, "Fix", "b", head="neo/x")
    client = await _publisher(app, number, fake_time, spacers)

    thread = await client.read_thread(pull_request=True)

    assert thread.pull is not None
    assert (thread.pull.number, thread.pull.head_ref) == (number, "neo/x")
    assert thread.pull.head_repository == REPO


async def test_a_repository_without_drafts_gets_a_regular_pr_and_says_so(
    github: FakeGitHub, publisher: RepoClient
) -> None:
    github.refuse_drafts(REPO)

    pr = await publisher.open_or_update_pr("neo/x", "main", "T", "body")

    assert (pr.created, pr.draft) == (True, False)
    assert [p["draft"] for p in github.pulls(REPO)] == [False]
    assert [c[2] for c in _calls(github) if c[0] == "POST"] == [422, 201]
    again = await publisher.open_or_update_pr("neo/x", "main", "T", "body 2")
    assert (again.number, again.created, again.draft) == (pr.number, False, False)


async def test_a_draft_where_drafts_are_allowed_is_a_draft(
    github: FakeGitHub, publisher: RepoClient
) -> None:
    pr = await publisher.open_or_update_pr("neo/x", "main", "T", "body")

    assert (pr.created, pr.draft) == (True, True)


async def test_a_race_is_recognised_from_a_validation_errors_detail(
    github: FakeGitHub, publisher: RepoClient
) -> None:
    await publisher.open_or_update_pr("neo/x", "main", "T", "one")
    github.add_route("GET", "/repos/{owner}/{repo}/pulls", lambda call: (200, []))

    with pytest.raises(GitHubError) as raised:
        await publisher.open_or_update_pr("neo/x", "main", "T", "two")

    # GitHub puts "Validation Failed" on top and what failed in errors[].message.
    assert str(raised.value) == (
        "github 422 POST /repos/octo/hello/pulls: Validation Failed: "
        "A pull request already exists for octo:neo/x."
    )


async def test_enterprise_server_gets_the_api_version_it_documents(
    fake_time: FakeTime, spacers: Spacers
) -> None:
    fake = FakeGitHub(path_prefix="/api/v3")
    fake.install(INSTALLATION, "octo", ["hello"])
    with fake:
        number = fake.add_issue(REPO, "T", "b", user="alice")
        async with GitHubApp(fake.app_id, fake.private_key_pem, fake.base_url) as app:
            client = await _publisher(app, number, fake_time, spacers)
            await client.read_thread(pull_request=False)
            await client.react("issue", number)
    versions = {r.headers.get("x-github-api-version") for r in fake.requests}
    assert versions == {"2022-11-28"}
