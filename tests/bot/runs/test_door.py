"""The run pages (bot.runs.pages) as neo serve's run site serves them, behind the real
door (bot.runs.door): GitHub sign-in and access against the fake GitHub's OAuth and
permission endpoints, over HTTP to the app."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from bot.queue import open_queue, sqlite_url
from tests.bot.queue.factories import make_request
from tests.bot.runs.signin import PUBLIC, oauth_github, settings_for, signed_in_browser
from tests.fakes import FakeGitHub


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    with oauth_github() as fake:
        yield fake


@asynccontextmanager
async def pages(github: FakeGitHub, tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    """A browser on the run pages of a queue holding one running job of octo/secret."""
    queue = open_queue(sqlite_url(tmp_path / "neo.db"))
    try:
        delivery = str(uuid.uuid4())
        queued = await queue.enqueue(delivery, [make_request(delivery, repository="octo/secret")])
        (job,) = queued.job_ids
        await queue.claim("w", 600)
        async with signed_in_browser(settings_for(github), queue) as (client, _):
            yield client, job
    finally:
        await queue.close()


async def test_a_private_run_sends_an_anonymous_visitor_to_sign_in_and_back(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.oauth.sign_in_as("writer")
    async with pages(github, tmp_path) as (client, job):
        first = await client.get(f"{PUBLIC}/runs/{job}")
        page = await client.get(f"{PUBLIC}/runs/{job}", follow_redirects=True)
        listed = await client.get(f"{PUBLIC}/runs")

    assert first.status_code == 303
    assert first.headers["location"].startswith(f"{github.origin}/login/oauth/authorize?")
    assert page.status_code == 200
    assert str(page.url) == f"{PUBLIC}/runs/{job}"
    assert "writer" in page.text
    assert f'action="/runs/{job}/stop"' in page.text  # a writer gets Stop and Steer
    assert f"/runs/{job}" in listed.text


async def test_a_reader_sees_no_stop_and_a_user_without_access_is_refused(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.oauth.sign_in_as("reader")
    async with pages(github, tmp_path) as (client, job):
        page = await client.get(f"{PUBLIC}/runs/{job}", follow_redirects=True)
        forged = await client.post(f"{PUBLIC}/runs/{job}/stop", data={"csrf": "x"})
    github.oauth.sign_in_as("mallory")
    async with pages(github, tmp_path / "other") as (client, job):
        refused = await client.get(f"{PUBLIC}/runs/{job}", follow_redirects=True)
        listed = await client.get(f"{PUBLIC}/runs")

    assert page.status_code == 200
    assert "/stop" not in page.text
    assert forged.status_code == 403
    assert refused.status_code == 403
    assert f"/runs/{job}" not in listed.text
