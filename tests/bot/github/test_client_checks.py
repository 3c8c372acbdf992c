"""A CI repair's reads through a real githubkit client against the fake GitHub: a pull
request's head, its head commit's people, failed check runs with annotations, and the
logs GitHub redirects to, downloaded without the token and tail-capped."""

from __future__ import annotations

import io
import zipfile
from collections.abc import AsyncIterator

import httpx
import pytest

from bot.github.app import CI_REPAIR_PERMISSIONS, JOB_PERMISSIONS, GitHubApp
from bot.github.client import GitHubError, RepoClient, Spacers
from bot.github.downloads import download_tail, download_zip_tails
from tests.bot.github.test_client import REPO, FakeTime, _publisher, fake_time, github
from tests.fakes import FakeGitHub

__all__ = ["fake_time", "github"]

SHA = "a" * 40


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


@pytest.fixture
def pull(github: FakeGitHub) -> int:
    number = github.add_pull(REPO, "Fix it", head="neo/issue-1", user=github.bot_login)
    github.set_pull_head(REPO, number, SHA)
    return number


@pytest.fixture
async def client(app: GitHubApp, pull: int, fake_time: FakeTime) -> RepoClient:
    return await _publisher(app, pull, fake_time, Spacers(0.0), permissions=CI_REPAIR_PERMISSIONS)


async def test_the_pull_requests_head_and_author_as_github_has_them_now(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    head = await client.pull_head()
    assert (head.number, head.head_ref, head.head_sha) == (pull, "neo/issue-1", SHA)
    assert head.author == github.bot_login
    assert head.head_repository == REPO
    assert head.state == "open"


async def test_a_commit_gives_its_message_and_linked_people(
    github: FakeGitHub, client: RepoClient
) -> None:
    github.add_commit(
        REPO, SHA, "Fix\n\nNeo-CI-Repair: 1", author=github.bot_login, author_email="n@x"
    )
    github.add_commit(REPO, "b" * 40, "Mine", author=None, author_email="who@example.com")
    commit = await client.head_commit(SHA)
    assert commit.message == "Fix\n\nNeo-CI-Repair: 1"
    assert (commit.author_login, commit.committer_login) == (github.bot_login,) * 2
    assert commit.author_email == "n@x"
    unlinked = await client.head_commit("b" * 40)
    assert unlinked.author_login is None
    assert unlinked.author_email == "who@example.com"
    with pytest.raises(GitHubError) as raised:
        await client.head_commit("c" * 40)
    assert raised.value.status == 422


async def test_check_runs_of_the_head_with_their_output_and_annotations(
    github: FakeGitHub, client: RepoClient
) -> None:
    red = github.add_check_run(
        REPO,
        SHA,
        "test",
        "failure",
        output={"title": "2 failed", "summary": "tests/test_a.py", "text": "assert 1 == 2"},
        annotations=[
            {"path": "a.py", "start_line": 3, "message": "boom", "title": "E1"},
            {"path": "b.py", "start_line": 9, "annotation_level": "warning", "message": "hm"},
        ],
    )
    github.add_check_run(REPO, SHA, "lint", "success", app="other-ci")
    github.add_check_run(REPO, "d" * 40, "test", "failure")
    runs = await client.check_runs(SHA)
    assert [(r.name, r.conclusion, r.failed, r.from_actions) for r in runs] == [
        ("test", "failure", True, True),
        ("lint", "success", False, False),
    ]
    assert (runs[0].title, runs[0].summary, runs[0].text) == (
        "2 failed",
        "tests/test_a.py",
        "assert 1 == 2",
    )
    assert runs[0].annotations_count == 2
    notes = await client.annotations(red)
    assert [(a.path, a.start_line, a.level, a.title, a.message) for a in notes] == [
        ("a.py", 3, "failure", "E1", "boom"),
        ("b.py", 9, "warning", "", "hm"),
    ]
    assert len(await client.annotations(red, limit=1)) == 1


async def test_a_job_log_is_a_redirect_downloaded_without_the_token_and_tail_capped(
    github: FakeGitHub, client: RepoClient
) -> None:
    log = b"".join(b"line %d\n" % n for n in range(100_000))
    run = github.add_check_run(REPO, SHA, "test", "failure", log=log)
    url = await client.log_location("job", run)
    assert "/_downloads/" in url
    async with httpx.AsyncClient() as plain:
        tail = await download_tail(plain, url, "test", cap=1000)
    assert tail.text.encode() == log[-1000:]
    assert tail.total_bytes == len(log)
    assert tail.cut
    assert github.download_requests == [(httpx.URL(url).path, None)]


async def test_a_runs_logs_are_a_zip_whose_members_tails_come_back(
    github: FakeGitHub, client: RepoClient
) -> None:
    spool = io.BytesIO()
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("test/1_Set up job.txt", b"setup\n")
        archive.writestr("test/3_Run tests.txt", b"x" * 5000 + b"\nFAILED test_a\n")
    github.set_run_logs(REPO, 77, spool.getvalue())
    url = await client.log_location("run", 77)
    async with httpx.AsyncClient() as plain:
        tails = await download_zip_tails(plain, url, cap=100)
    assert [(t.name, t.cut) for t in tails] == [
        ("test/1_Set up job.txt", False),
        ("test/3_Run tests.txt", True),
    ]
    assert tails[1].text.endswith("\nFAILED test_a\n")
    assert len(tails[1].text) == 100


async def test_a_log_github_does_not_have_is_a_404(client: RepoClient) -> None:
    with pytest.raises(GitHubError) as raised:
        await client.log_location("job", 999)
    assert raised.value.status == 404


async def test_a_token_without_checks_and_actions_is_refused_them(
    app: GitHubApp, pull: int, fake_time: FakeTime, github: FakeGitHub
) -> None:
    plain = await _publisher(app, pull, fake_time, Spacers(0.0), permissions=JOB_PERMISSIONS)
    run = github.add_check_run(REPO, SHA, "test", "failure", log=b"log")
    with pytest.raises(GitHubError) as raised:
        await plain.check_runs(SHA)
    assert raised.value.status == 403
    with pytest.raises(GitHubError):
        await plain.log_location("job", run)
