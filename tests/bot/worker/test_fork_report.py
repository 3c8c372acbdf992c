"""The report and the pull request on a fork's pull request: the proposed patch whole or
not at all, what a pushed branch left out, and nothing a fork wrote that GitHub acts on."""

from __future__ import annotations

from bot.jobs import Conclusion, JobKind, JobRequest, Thread, TriggerKind
from bot.worker.pull_request import RunFacts, pr_body
from bot.worker.rendering import MAX_COMMENT_CHARS, render_report
from runner.fork import ForkResult
from runner.job import JobResult
from tests.bot.worker.test_progress import (
    MENTION,
    code_text,
    outcome,
    prose_text,
    raw_html,
    working,
)

HEAD = "0123456789abcdef0123456789abcdef01234567"
PATCH = (
    "diff --git a/typo.txt b/typo.txt\n--- a/typo.txt\n+++ b/typo.txt\n"
    "@@ -1 +1 @@\n-teh cat\n+the cat\n"
)


def proposed(patch: str | None = PATCH, **more: object) -> ForkResult:
    chars = len(patch) if patch is not None else 2_000_000
    fields: dict[str, object] = {
        "head": HEAD,
        "pushed": False,
        "patch": patch,
        "patch_chars": chars,
        "patch_files": ("typo.txt",),
    }
    fields.update(more)
    return ForkResult(**fields)  # type: ignore[arg-type]


def test_a_proposed_change_is_the_reports_patch_with_why_nothing_was_pushed() -> None:
    report = render_report(working().state, outcome(fork=proposed()))

    lines = report.split("\n")
    assert lines[2] == (
        "✅ **Done** — the change is proposed below as a patch; nothing was pushed · 4m 12s"
    )
    assert (
        "**The change, as a patch** against the fork's head `0123456789ab`. Nothing was"
        " pushed: this pull request comes from a fork, and a fork's code reaches this"
        " repository only with `fork_work: push` in `.github/neo.yml`. On the pull request's"
        " branch, save it as `neo.patch` and run `git apply neo.patch`."
    ) in report
    assert f"<details open><summary>neo.patch: 1 file</summary>\n\n```diff\n{PATCH}```" in report
    assert PATCH in code_text(report)


def test_a_patch_is_fenced_past_its_own_backticks_and_nothing_in_it_acts() -> None:
    hostile = PATCH + "+```\n+@mona Fixes #1 <img src=x>\n+````\n"
    report = render_report(working().state, outcome(fork=proposed(hostile)))

    assert f"`````diff\n{hostile}`````" in report
    assert hostile in code_text(report)
    assert not MENTION.search(prose_text(report))
    assert not any("<img" in html for html in raw_html(report))


def test_a_patch_the_comment_cannot_hold_is_named_not_cut() -> None:
    huge = PATCH + "".join(f"+line {i} of a long change\n" for i in range(5_000))
    files = tuple(f"src/f{i}.py" for i in range(25))

    report = render_report(working().state, outcome(fork=proposed(huge, patch_files=files)))

    assert len(report) <= MAX_COMMENT_CHARS
    assert "neo.patch" not in report
    assert (
        f"is a patch of {len(huge):,} characters against the fork's head `0123456789ab`,"
        " too long for this comment."
    ) in report
    assert "`src/f19.py` and 5 more" in report


def test_a_patch_longer_than_the_runner_keeps_is_named_too() -> None:
    report = render_report(working().state, outcome(fork=proposed(None)))

    assert "is a patch of 2,000,000 characters" in report
    assert "```diff" not in report


def test_a_budget_cut_short_proposal_says_the_patch_holds_the_work_so_far() -> None:
    report = render_report(
        working().state,
        outcome(Conclusion.INCOMPLETE, error="max_turns: out of turns", fork=proposed()),
    )

    assert "⚠️ **Incomplete** — the work so far: the change is proposed below" in report
    assert "The patch below holds the work so far" in report


def test_a_pushed_branch_names_what_of_the_fork_it_left_out() -> None:
    fork = ForkResult(HEAD, pushed=True, left_out=(".github/workflows/evil.yml", "Jenkinsfile"))

    report = render_report(
        working().state, outcome(pr_url="https://github.com/octo/app/pull/9", fork=fork)
    )

    assert (
        "ℹ️ The branch holds the fork's changes at `0123456789ab` without its changes to CI"
        " configuration, which never come into this repository from a fork:"
        " `.github/workflows/evil.yml`, `Jenkinsfile`."
    ) in report
    assert "neo.patch" not in report


def test_the_pull_request_of_a_forks_branch_says_what_it_holds() -> None:
    request = JobRequest(
        kind=JobKind.TASK,
        thread=Thread("octo/app", 7, is_pull_request=True),
        installation_id=1,
        event="issue_comment.created",
        trigger=TriggerKind.COMMENT,
        trigger_id=1,
        author="mona",
        author_association="MEMBER",
        instruction="@neo fix the typo",
        dedupe_key="comment:1",
        delivery_id="d1",
    )
    result = JobResult(
        conclusion="changed",
        branch="neo/pr-7",
        summary="Fixed the typo.",
        fork=ForkResult(HEAD, pushed=True, left_out=(".github/workflows/@evil.yml",)),
    )

    body = pr_body(result, request, RunFacts())

    assert (
        "Based on #7, from a fork: its changes at `0123456789ab`, without its changes to CI" in body
    )
    assert "which never come into this repository from a fork." in body
    assert "@evil" not in body  # a path never pings
