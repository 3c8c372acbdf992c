"""Hostile titles: an issue's title never closes another issue through Neo's commit.

GitHub closes an issue when a commit reaching the default branch says
`Fixes #1`. An issue titled "Fixes #1 ..." became the subject of Neo's
commit and closed #1 on merge. The real worker, the fake GitHub, the real
git CLI against the fake git server, the local sandbox.
"""

# The worker tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import JobState
from bot.queue import SqliteQueue
from tests.bot.worker.test_loop import (  # noqa: F401 (fixtures)
    REPO,
    anthropic_env,
    app,
    clock,
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
from tests.fakes import FakeAnthropicAPI, FakeGitHub

# GitHub's grammar, generously: a keyword, maybe a colon, whitespace, a reference.
CLOSES = re.compile(
    r"(?<![a-z0-9])(close[sd]?|fix(e[sd])?|resolve[sd]?)[*_~`]*:?[*_~`]*\s+[*_~`]*"
    r"(#\d|gh-\d|[\w.-]+/[\w.-]+#\d|https?://)",
    re.IGNORECASE,
)


@pytest.mark.parametrize(
    ("title", "subject"),
    [
        ("Fixes #1 crash on start", "Neo: Fixes issue #1 crash on start (#2)"),
        ("_Resolves_: octo/hello#1 too", "Neo: _Resolves_: issue octo/hello#1 too (#2)"),
        ("closes GH-1", "Neo: closes issue GH-1 (#2)"),
    ],
)
async def test_an_issue_titled_with_a_closing_keyword_closes_nothing_through_the_commit(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    title: str,
    subject: str,
) -> None:
    github.add_issue(REPO, "An unrelated bug", user="alice")  # #1, which must stay open
    number = github.add_issue(REPO, title, "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    message = git(origin, "log", "-1", "--format=%B", f"refs/heads/neo/issue-{number}")
    assert CLOSES.search(message) is None, message
    # The title still reads as it was, and the commit names its own thread.
    assert number == 2
    assert message.splitlines()[0] == subject
