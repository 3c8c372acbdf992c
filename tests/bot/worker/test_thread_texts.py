"""Which review threads a job answers, what its reply says, which it resolves (pure)."""

from __future__ import annotations

from bot.github.models import Comment, ReviewComment, ReviewThread
from bot.worker.threads import (
    ANSWER_LIMIT,
    answered_threads,
    reply_key,
    thread_answer,
    threads_to_resolve,
)
from runner.job import Ending, JobResult

PR = "https://github.com/octo/hello/pull/7"
SHA = "0123456789abcdef0123456789abcdef01234567"


def inline(comment_id: int, in_reply_to: int | None = None) -> ReviewComment:
    comment = Comment(comment_id, "mona", 1, False, "MEMBER", "fix", "2026-01-01T00:00:00Z")
    return ReviewComment(comment, "a.py", 1, None, "RIGHT", "@@", in_reply_to)


def thread(thread_id: str, comment_id: int | None, resolved: bool = False) -> ReviewThread:
    return ReviewThread(thread_id, resolved, False, "mona", "fix", "a.py", 1, comment_id)


def result(
    conclusion: Ending,
    summary: str = "Renamed y to size.",
    *,
    commit: str | None = None,
    error_kind: str | None = None,
) -> JobResult:
    return JobResult(
        conclusion=conclusion,
        branch="neo/issue-3",
        summary=summary,
        commit=commit,
        error_kind=error_kind,
    )


def test_each_comment_answers_its_threads_first_comment_once_in_order() -> None:
    comments = [inline(5), inline(9, in_reply_to=2), inline(6, in_reply_to=5), inline(4)]
    assert answered_threads(comments) == (5, 2, 4)
    assert answered_threads([]) == ()


def test_a_reply_key_names_the_job_and_the_thread() -> None:
    assert reply_key(12, 5) == "thread-12-5"
    assert reply_key(12, 5) != reply_key(13, 5) != reply_key(12, 6)


def test_a_pushed_change_is_named_with_its_commit_and_the_summary() -> None:
    answer = thread_answer(result("changed", commit=SHA), PR)
    assert answer == f"Pushed [`0123456`]({PR}/commits/{SHA}) for this.\n\nRenamed y to size."
    assert thread_answer(result("changed", "", commit=SHA), None) == "Pushed `0123456` for this."


def test_nothing_pushed_is_the_models_answer_and_a_stop_says_so() -> None:
    assert thread_answer(result("no_changes", "Because y is a size."), PR) == (
        "Because y is a size."
    )
    assert "nothing to add" in thread_answer(result("no_changes", ""), PR)
    stopped = thread_answer(result("failed", "", error_kind="max_turns"), PR)
    assert stopped == "Neo stopped before pushing anything (max_turns)."


def test_the_answer_is_capped_and_cannot_ping_anyone() -> None:
    answer = thread_answer(result("no_changes", "@octo/team " + "x" * 5000), PR)
    assert len(answer) <= ANSWER_LIMIT
    assert answer.endswith("…")
    assert "@octo/team" not in answer


def test_only_the_answered_open_threads_are_resolved() -> None:
    threads = [
        thread("PRRT_a", 5),
        thread("PRRT_b", 2, resolved=True),
        thread("PRRT_c", 4),
        thread("PRRT_d", None),
        thread("PRRT_e", 8),
    ]
    assert threads_to_resolve(threads, [5, 2, 4]) == ("PRRT_a", "PRRT_c")
    assert threads_to_resolve(threads, []) == ()
