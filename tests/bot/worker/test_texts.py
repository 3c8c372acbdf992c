"""The given-up report and the run's outcome, from tables (pull requests: test_pull_request)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.jobs import Conclusion, Job, JobOutcome, JobState
from bot.worker.pull_request import RunFacts, pr_body
from bot.worker.rendering import render_report
from bot.worker.texts import given_up_report, run_outcome, stored_outcome
from runner.git import DiffStat, FileStat
from runner.job import JobResult
from tests.bot.worker.test_progress import working
from tests.bot.worker.test_spec import REQUEST

CHANGED = JobResult(
    conclusion="changed",
    branch="neo/issue-12",
    summary="Fixed it, @octocat. fixes #3",
    diffstat=DiffStat((FileStat("README.md", 2, 1),)),
)


@pytest.mark.parametrize(
    ("state", "error", "heading", "line"),
    [
        (JobState.FAILED, "gave up after 3 attempts.", "❌ **Failed**", "Gave up after 3 attempts"),
        (JobState.CANCELLED, None, "🛑 **Cancelled**", "Its worker stopped answering"),
    ],
)
def test_the_report_of_a_job_the_queue_gave_up_on(
    state: JobState, error: str | None, heading: str, line: str
) -> None:
    job = Job(
        id=4,
        request=REQUEST,
        state=state,
        attempts=3,
        created_at=0.0,
        updated_at=0.0,
        result=JobOutcome(conclusion=Conclusion.FAILED, error=error),
    )
    marker, shown, said = given_up_report(job).split("\n\n")
    assert "neo:job=4" in marker
    assert shown == heading
    assert said.startswith(f"**Error:** {line}. Nothing more will be pushed")


def test_a_runs_outcome_says_whether_code_changed() -> None:
    assert run_outcome(CHANGED, pr_url=None, cancelled_by=None, config_path="x").changed
    failed = replace(CHANGED, conclusion="failed", error_kind="sandbox_error")
    assert not run_outcome(failed, pr_url=None, cancelled_by=None, config_path="x").changed


def test_a_runs_outcome_tells_what_was_not_pushed_and_why() -> None:
    blocked = replace(CHANGED, blocked_paths=(".github/workflows/ci.yml",))
    outcome = run_outcome(blocked, pr_url=None, cancelled_by=None, config_path="ci/neo.yml")
    assert outcome.conclusion is Conclusion.SUCCESS
    assert outcome.summary.endswith(
        "Not pushed: changes to `.github/workflows/ci.yml` (workflow edits are off in"
        " `ci/neo.yml`: `allow_workflow_edits`)."
    )
    failed = replace(CHANGED, conclusion="failed", error_kind="sandbox_error")
    assert run_outcome(failed, pr_url=None, cancelled_by=None, config_path="x").error == (
        "sandbox_error: no detail"
    )


def test_a_runs_outcome_says_when_its_last_word_could_not_be_paid_for() -> None:
    why = "max_cost: $1.19 of the $1.20 cost limit is spent: the next model call would cost"
    cut = replace(CHANGED, error_kind="max_cost", summary="Wrote f1.", wrap_up_failed=why)

    outcome = run_outcome(cut, pr_url=None, cancelled_by=None, config_path="x")

    assert outcome.summary == (
        "Wrote f1.\n\nNo closing summary: the model's last word after the budget ran out was"
        f" not written ({why}). What is above is its last message before."
    )


def test_the_report_names_each_model_whose_calls_are_not_in_its_cost() -> None:
    # Issue 23: a subagent's model without a price made 8 calls while the
    # report showed only the parent's cost, and said nothing of them.
    mixed = replace(CHANGED, cost_usd=0.12, unpriced=(("claude-private-9", 8), ("a`b", 1)))

    outcome = run_outcome(mixed, pr_url=None, cancelled_by=None, config_path=".github/neo.yml")
    report = render_report(working().state, outcome)

    assert outcome.notes == (
        "`claude-private-9` has no known price: its 8 calls are left out of the cost shown;"
        " give its price under `prices:` in `.github/neo.yml` to count them.",
        "``a`b`` has no known price: its call is left out of the cost shown;"
        " give its price under `prices:` in `.github/neo.yml` to count it.",
    )
    assert f"ℹ️ {outcome.notes[0]}" in report


def test_the_stored_outcome_holds_the_branch_the_session_the_cost_and_the_report() -> None:
    result = replace(CHANGED, cost_usd=0.5)
    outcome = run_outcome(
        result, pr_url="https://github.test/pr/1", cancelled_by=None, config_path="x"
    )
    stored = stored_outcome(outcome, "✅ **Done**", branch="neo/issue-12", session_id="s-1")
    assert stored == JobOutcome(
        conclusion=Conclusion.SUCCESS,
        pr_url="https://github.test/pr/1",
        branch="neo/issue-12",
        session_id="s-1",
        cost_usd=0.5,
        report="✅ **Done**",
    )
    assert set(stored.to_json()) >= {
        "conclusion",
        "pr_url",
        "error",
        "branch",
        "session_id",
        "cost_usd",
        "report",
    }


def test_what_the_agent_lacked_is_a_line_of_the_report_and_the_pull_request() -> None:
    lacking = replace(
        CHANGED,
        summary="Fixed the date parser.",
        needed=("network access to registry.npmjs.org", "the secret `NPM_TOKEN` @owner"),
    )

    outcome = run_outcome(lacking, pr_url=None, cancelled_by=None, config_path="x")
    report = render_report(working().state, outcome)
    body = pr_body(lacking, REQUEST, RunFacts())

    line = "**Needed:** network access to registry.npmjs.org; the secret `NPM_TOKEN` @\u200bowner"
    assert f"\n\n{line}\n\n" in report
    assert report.index(line) < report.index("Fixed the date parser.")
    assert f"\n\n{line}\n\n" in body
    assert "Needed" not in render_report(
        working().state, run_outcome(CHANGED, pr_url=None, cancelled_by=None, config_path="x")
    )
