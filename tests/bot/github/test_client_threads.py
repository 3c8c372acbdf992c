"""Review threads through a real githubkit client against the fake GitHub's GraphQL
endpoint: listed with whether the head moved past them, resolved by id, and GitHub's
GraphQL errors as one line."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from githubkit.exception import GraphQLFailed

from bot.github.app import GitHubApp
from bot.github.client import GitHubError, RepoClient, Spacers
from tests.bot.github.test_client import REPO, FakeTime, _publisher, fake_time, github
from tests.fakes import FakeGitHub

__all__ = ["fake_time", "github"]


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


@pytest.fixture
def pull(github: FakeGitHub) -> int:
    number = github.add_pull(REPO, "Add y", head="feature")
    github.put_file(REPO, "a.py", "x\ny\nz\n", ref="feature")
    return number


@pytest.fixture
async def client(app: GitHubApp, pull: int, fake_time: FakeTime) -> RepoClient:
    return await _publisher(app, pull, fake_time, Spacers(0.0))


async def test_threads_are_outdated_once_the_head_changes_their_line_and_resolve_by_id(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    mine = github.add_review_comment(
        REPO, pull, "Why y?", user=github.bot_login, path="a.py", line=2
    )
    github.add_review_comment(REPO, pull, "Because.", path="a.py", line=2, in_reply_to=mine)
    human = github.add_review_comment(REPO, pull, "Hm, y.", user="mona", path="a.py", line=2)
    kept = github.add_review_comment(
        REPO, pull, "And z?", user=github.bot_login, path="a.py", line=3
    )
    github.put_file(REPO, "a.py", "x\ny = 1\nz\n", ref="feature")

    threads = await client.review_threads()

    # The reply is in its thread, not one of its own.
    assert [(t.id, t.author, t.outdated, t.line) for t in threads] == [
        (f"PRRT_{mine}", "neo-test", True, None),
        (f"PRRT_{human}", "mona", True, None),
        (f"PRRT_{kept}", "neo-test", False, 3),
    ]
    assert not any(t.resolved for t in threads)
    assert threads[0].body == "Why y?"
    assert threads[0].path == "a.py"

    await client.resolve_thread(f"PRRT_{mine}")
    await client.resolve_thread(f"PRRT_{mine}")  # again: nothing changes

    assert github.resolved_threads(REPO) == {f"PRRT_{mine}"}
    assert [t.resolved for t in await client.review_threads()] == [True, False, False]


async def test_an_unknown_thread_is_githubs_graphql_error_in_one_line(
    client: RepoClient, pull: int
) -> None:
    with pytest.raises(GitHubError) as raised:
        await client.resolve_thread("PRRT_999999")
    said = str(raised.value)
    assert said == (
        "github: GraphQL resolveReviewThread failed: "
        "Could not resolve to a node with the global id of 'PRRT_999999'"
    )


async def test_the_fake_answers_any_other_document_with_githubs_error_shape(
    app: GitHubApp, pull: int, fake_time: FakeTime
) -> None:
    client = await _publisher(app, pull, fake_time, Spacers(0.0))
    with pytest.raises(GraphQLFailed) as raised:
        await client._github.async_graphql("query { viewer { login } }")
    errors = raised.value.response.errors or []
    assert len(errors) == 1
    assert "only" in errors[0].message


async def test_a_thread_names_its_first_comment_and_a_reply_joins_it_once_per_key(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    top = github.add_review_comment(REPO, pull, "Rename y.", user="mona", path="a.py", line=2)
    asking = github.add_review_comment(REPO, pull, "@neo do it", user="mona", in_reply_to=top)

    # Replying to the reply lands in the same thread, as on GitHub.
    first = await client.reply_in_thread(asking, "thread-4-1", "Renamed.")
    again = await client.reply_in_thread(asking, "thread-4-1", "Renamed.")
    other = await client.reply_in_thread(top, "thread-5-1", "Renamed again.")

    assert first == again != other
    replies = github.thread_replies(REPO, top)
    assert [(r["id"], r["user"]) for r in replies] == [
        (asking, "mona"),
        (first, github.bot_login),
        (other, github.bot_login),
    ]
    assert replies[1]["body"] == "<!-- neo:reply=thread-4-1 -->\nRenamed."
    [thread] = await client.review_threads()
    assert (thread.id, thread.comment_id) == (f"PRRT_{top}", top)
    read = await client.read_review_comment(asking)
    assert (read.comment.id, read.in_reply_to) == (asking, top)
    assert (await client.read_review_comment(top)).in_reply_to is None


async def test_a_reply_to_a_comment_that_is_not_there_is_one_line(
    client: RepoClient, pull: int
) -> None:
    with pytest.raises(GitHubError) as raised:
        await client.reply_in_thread(999999, "thread-4-999999", "Hello.")
    assert "\n" not in str(raised.value)
    assert raised.value.status == 404


async def test_threads_past_the_first_page_are_read_by_their_cursor(
    github: FakeGitHub, client: RepoClient, pull: int
) -> None:
    made = [
        github.add_review_comment(REPO, pull, f"Point {n}.", user="mona", path="a.py", line=2)
        for n in range(230)
    ]

    threads = await client.review_threads()

    assert [t.comment_id for t in threads] == made  # every one, in order, none twice
    pages = [r for r in github.requests if r.route == "/graphql"]
    assert [r.body["variables"]["after"] for r in pages] == [None, "100", "200"]
