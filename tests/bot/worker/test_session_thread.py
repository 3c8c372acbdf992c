"""Which session a job on Neo's own branch continues: the thread the branch was made for
(pure tables, and the spec a pull request's job gets)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.config import RepoConfig
from bot.jobs import JobKind, Thread
from bot.worker.spec import Identity, job_spec, session_thread
from tests.bot.worker.test_spec import BOT, REQUEST, THREAD, _Settings, job


@pytest.mark.parametrize(
    ("branch", "prefix", "expected"),
    [
        ("neo/issue-5", "neo/", "octo/hello#5"),
        ("neo/pr-31", "neo/", "octo/hello#31"),
        ("ci/issue-5", "ci/", "octo/hello#5"),
        ("neo/issue-5", "ci/", None),  # another prefix: not Neo's branch in this repository
        ("neo/review-5", "neo/", None),  # a review's branch is never pushed
        ("neo/schedule-weekly", "neo/", None),
        ("neo/issue-", "neo/", None),
        ("neo/issue-5a", "neo/", None),
        ("neo/issue-05", "neo/", None),  # Neo never writes a leading zero
        ("neo/issue-٥", "neo/", None),  # a digit, but not one GitHub numbers with
        ("neo/issue5", "neo/", None),
        ("feature/issue-5", "neo/", None),
        ("neo/issue-5", "", None),
    ],
)
def test_the_thread_a_branch_of_neos_was_made_for(
    branch: str, prefix: str, expected: str | None
) -> None:
    assert session_thread(branch, prefix, "Octo/Hello") == expected


PULL = replace(REQUEST, thread=Thread("Octo/Hello", 40, is_pull_request=True))


@pytest.mark.parametrize(
    ("head_ref", "same", "session"),
    [
        ("neo/issue-12", True, "octo/hello#12"),  # the session goes on
        ("neo/pr-9", True, "octo/hello#9"),  # the fork pull request's
        ("feature", True, "octo/hello#40"),  # a human's branch: the pull request's own
        ("neo/issue-12", False, "octo/hello#40"),  # a fork's look-alike: never
    ],
)
def test_a_job_on_neos_pull_request_continues_its_threads_session(
    head_ref: str, same: bool, session: str
) -> None:
    thread = replace(THREAD, head_ref=head_ref, same_repository=same)
    spec, _ = job_spec(
        job(PULL),
        RepoConfig(),
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t"),
    )
    assert spec.session_key == session


def test_a_review_job_keeps_a_conversation_of_its_own() -> None:
    thread = replace(THREAD, head_ref="neo/issue-12")
    spec, _ = job_spec(
        job(replace(PULL, kind=JobKind.REVIEW)),
        RepoConfig(),
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t"),
    )
    assert spec.session_key == "octo/hello#40:review"
