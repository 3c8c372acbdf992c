"""Hostile titles and summaries: neither closes another issue through Neo's commit or
pull request.

GitHub closes an issue when a commit reaching the default branch says
`Fixes #1`, and a squash merge's message starts with the pull request's
title. An issue titled "Fixes #1 ..." became the subject of Neo's commit
and closed #1 on merge; the subject and the title are now the model's
summary line, which an issue's text can steer. The real worker, the fake
GitHub, the real git CLI against the fake git server, the local sandbox.
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
    settings,
    worker,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text, tool_use

# GitHub's grammar, generously: a keyword, maybe a colon, whitespace, a reference.
CLOSES = re.compile(
    r"(?<![a-z0-9])(close[sd]?|fix(e[sd])?|resolve[sd]?)[*_~`]*:?[*_~`]*\s+[*_~`]*"
    r"(#\d|gh-\d|[\w.-]+/[\w.-]+#\d|https?://)",
    re.IGNORECASE,
)


@pytest.mark.parametrize(
    ("title", "line", "subject"),
    [
        # The model repeats the issue's title: that says what was asked, not done.
        ("Fixes #1 crash on start", "Fixes #1 crash on start", "Change README.md"),
        (
            "_Resolves_: octo/hello#1 too",
            "Guard the start-up; _Resolves_: octo/hello#1 too",
            "Guard the start-up; _Resolves_: issue octo/hello#1 too",
        ),
        ("closes GH-1", "Add a line that closes GH-1", "Add a line that closes issue GH-1"),
    ],
)
async def test_a_closing_keyword_in_a_title_or_summary_closes_nothing_through_the_commit(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    title: str,
    line: str,
    subject: str,
) -> None:
    github.add_issue(REPO, "An unrelated bug", user="alice")  # #1, which must stay open
    number = github.add_issue(REPO, title, "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    edit = {"path": "README.md", "old_string": "# fixture\n", "new_string": "# fixture\n\nHi.\n"}
    fake_anthropic.script(
        Reply([tool_use("t1", "edit_file", edit)], "tool_use"),
        Reply([text(f"{line}\n\nAdded a line to README.md.")]),
    )
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    message = git(origin, "log", "-1", "--format=%B", f"refs/heads/neo/issue-{number}")
    assert CLOSES.search(message) is None, message
    # The line still reads as it was, and the commit names its own thread.
    assert number == 2
    assert message.splitlines()[0] == subject
    assert f"Refs #{number}" in message
    [pull] = github.pulls(REPO)
    assert pull["title"] == subject
    assert CLOSES.search(pull["title"]) is None
