"""Reviews through a real githubkit client against the fake GitHub: one review per job,
found again on a retry; GitHub's 422 for a line outside the diff; every review comment."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.github.app import GitHubApp
from bot.github.client import GitHubError, RepoClient, Spacers
from tests.bot.github.test_client import REPO, FakeTime, _publisher, fake_time, github
from tests.fakes import FakeGitHub

__all__ = ["fake_time", "github"]

DIFF = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x\n+y\n z\n"


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


@pytest.fixture
def pull(github: FakeGitHub) -> int:
    return github.add_pull(REPO, "Add y", diff=DIFF)


@pytest.fixture
async def client(app: GitHubApp, pull: int, fake_time: FakeTime) -> RepoClient:
    return await _publisher(app, pull, fake_time, Spacers(0.0))


async def test_a_retried_job_finds_its_review_and_submits_no_second(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    comments: list[dict[str, object]] = [
        {"path": "a.py", "line": 2, "side": "RIGHT", "body": "Why y?"}
    ]
    first = await client.submit_review("review-5", "Summary.", comments)
    again = await client.submit_review("review-5", "Summary.", comments)
    other = await client.submit_review("review-6", "Another job's.", [])

    assert again == first
    assert other.id != first.id
    reviews = github.reviews(REPO, pull)
    assert [(r["state"], len(r["comments"])) for r in reviews] == [
        ("COMMENTED", 1),
        ("COMMENTED", 0),
    ]
    assert reviews[0]["body"].endswith("\nSummary.")
    assert first.url.endswith(f"#pullrequestreview-{first.id}")


async def test_a_line_outside_the_diff_is_githubs_422_and_no_review(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    outside: list[dict[str, object]] = [{"path": "a.py", "line": 7, "side": "RIGHT", "body": "?"}]
    with pytest.raises(GitHubError) as raised:
        await client.submit_review("review-5", "Summary.", outside)
    assert raised.value.status == 422
    assert github.reviews(REPO, pull) == []


async def test_every_review_comment_of_the_pull_request_oldest_first(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    one = github.add_review_comment(REPO, pull, "First.", path="a.py", line=2)
    two = github.add_review_comment(REPO, pull, "Second.", path="a.py", line=3, start_line=1)
    elsewhere = github.add_pull(REPO, "Another", head="other")
    github.add_review_comment(REPO, elsewhere, "Not this one's.")

    found = await client.pull_review_comments()

    assert [(c.comment.id, c.path, c.start_line, c.line) for c in found] == [
        (one, "a.py", None, 2),
        (two, "a.py", 1, 3),
    ]
