"""The job spec's pure parts, from tables: branches, titles, commit messages, addresses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.jobs import JobRequest, Thread
from bot.worker.prompt import Post
from bot.worker.spec import (
    ThreadContext,
    commit_message,
    noreply_email,
    task_title,
    threadless_branch,
    work_branch,
)
from runner.errors import ConfigError

REQUEST = JobRequest(
    kind="run",
    thread=Thread("octo/hello", 12),
    installation_id=7,
    event="issue_comment.created",
    trigger_id=1,
    author="mona",
    author_association="MEMBER",
    instruction="@neo fix it",
    dedupe_key="comment:1",
    delivery_id="d1",
)
THREAD = ThreadContext("Fix it", Post(author="mona", association="MEMBER", body=""), (), None)


@pytest.mark.parametrize(
    ("is_pull", "head_ref", "same", "expected"),
    [
        (False, None, True, ("neo/issue-12", False, None)),
        (True, "feature", True, ("feature", True, None)),
        # A fork's branch cannot be pushed to: Neo's own, from the pull request.
        (True, "feature", False, ("neo/pr-12", False, 12)),
        (True, None, True, ("neo/pr-12", False, 12)),
    ],
)
def test_a_threads_work_branch(
    is_pull: bool, head_ref: str | None, same: bool, expected: tuple[str, bool, int | None]
) -> None:
    request = replace(REQUEST, thread=Thread("octo/hello", 12, is_pull_request=is_pull))
    thread = replace(THREAD, head_ref=head_ref, same_repository=same)
    assert work_branch(request, thread, "neo/") == expected


@pytest.mark.parametrize(
    ("branch", "message"),
    [
        (None, "must name the branch to work on; none was given"),
        ("  ", "must name the branch to work on; none was given"),
        ("main", "the job's branch 'main' is the default branch"),
    ],
)
def test_a_threadless_job_needs_a_branch_of_its_own(branch: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        threadless_branch(replace(REQUEST, branch=branch), "main")


def test_a_threadless_job_works_on_the_branch_it_names() -> None:
    assert threadless_branch(replace(REQUEST, branch=" neo/docs "), "main") == "neo/docs"


@pytest.mark.parametrize(
    ("instruction", "title"),
    [
        ("\n\n  Update   the docs \nthen more", "Update the docs"),
        ("", ""),
        ("x" * 80, "x" * 71 + "…"),
    ],
)
def test_a_task_title_is_the_first_line_cut_short(instruction: str, title: str) -> None:
    assert task_title(instruction) == title


@pytest.mark.parametrize(
    ("title", "message"),
    [
        ("Fix  the\nbug", "Neo: Fix the bug (#12)"),
        ("", "Neo: issue #12 (#12)"),
        ("y" * 70, f"Neo: {'y' * 60} (#12)"),
    ],
)
def test_a_commit_message_names_the_thread(title: str, message: str) -> None:
    assert commit_message(title, 12) == message


@pytest.mark.parametrize(
    ("user_id", "email"),
    [(None, "mona@users.noreply.github.com"), (5, "5+mona@users.noreply.github.com")],
)
def test_the_noreply_address(user_id: int | None, email: str) -> None:
    assert noreply_email("mona", user_id) == email
