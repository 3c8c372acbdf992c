"""The report's hidden outcome line: written after the job's marker, read back the same,
never taken from anywhere else."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.github.markers import job_marker
from bot.jobs import Conclusion, Job, JobOutcome, JobState
from bot.queue import SpendRecord
from bot.worker.rendering import MAX_COMMENT_CHARS
from bot.worker.reported import reported_outcome, with_outcome
from bot.worker.untrusted import neutralise
from tests.bot.queue.factories import make_request

JOB = Job(
    id=12,
    request=make_request("d-12"),
    state=JobState.RUNNING,
    attempts=1,
    created_at=0.0,
    updated_at=0.0,
)
REPORT = (
    f"{job_marker(12)}\n\n✅ **Done** — pull request: [#3](https://github.com/octo/hello/pull/3)"
)
OUTCOME = JobOutcome(
    conclusion=Conclusion.SUCCESS,
    pr_url="https://github.com/octo/hello/pull/3",
    branch="neo/issue-1",
    session_id="octo-hello-1-8a6f6c9420c6d55d",
    cost_usd=0.0296,
    report=REPORT,
)
SPEND = (
    SpendRecord(
        12, "octo/hello", 42, "claude-sonnet-5-5", 1_800_000_000.123456, 0.0296, 14_376, 83
    ),
)


def test_the_line_follows_the_marker_and_gives_back_the_outcome_and_spend() -> None:
    body = with_outcome(REPORT, JOB, OUTCOME, SPEND)
    assert body.startswith(f"{job_marker(12)}\n<!-- neo:outcome=")
    # Retried, a later attempt reads it: the queue gets what the thread shows.
    later = replace(JOB, attempts=2)
    reported = reported_outcome(body, later)
    assert reported is not None
    assert reported.attempt == 1
    assert reported.outcome == OUTCOME
    assert reported.spend == SPEND


def test_github_line_endings_are_read_too() -> None:
    body = with_outcome(REPORT, JOB, OUTCOME, SPEND).replace("\n", "\r\n")
    reported = reported_outcome(body, JOB)
    assert reported is not None
    assert reported.outcome == OUTCOME


def test_an_error_cannot_end_the_hidden_comment_early() -> None:
    failed = JobOutcome(
        conclusion=Conclusion.FAILED,
        error="sandbox_error: `echo --> <b>x</b> & more` failed\nwith a second line",
        report=REPORT,
    )
    body = with_outcome(REPORT, JOB, failed, ())
    line = body.splitlines()[1]
    assert line.count("-->") == 1
    assert line.endswith(" -->")
    assert "<b>" not in line
    reported = reported_outcome(body, JOB)
    assert reported is not None
    assert (
        reported.outcome.error
        == "sandbox_error: `echo --> <b>x</b> & more` failed with a second line"
    )


def test_the_line_stays_within_the_margin_the_report_leaves() -> None:
    # render_report keeps 1,000 characters of GitHub's limit (MAX_COMMENT_CHARS) free.
    long = JobOutcome(conclusion=Conclusion.FAILED, error="x" * 50_000, report=REPORT)
    body = with_outcome(REPORT, JOB, long, SPEND * 3)
    assert len(body) - len(REPORT) < 1_000 < MAX_COMMENT_CHARS


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(REPORT, id="a report from before the line"),
        pytest.param(f"{job_marker(12)}\n\n⏳ Working…", id="a progress comment"),
        pytest.param("", id="empty"),
        pytest.param(
            f"{job_marker(12)}\n<!-- neo:outcome={{not json}} -->\n\nx",
            id="a line that is not JSON",
        ),
        pytest.param(
            f'{job_marker(12)}\n<!-- neo:outcome={{"attempt":1,"outcome":'
            '{"conclusion":"won"},"spend":[]} -->\n\nx',
            id="an unknown conclusion",
        ),
    ],
)
def test_anything_else_is_no_report(body: str) -> None:
    assert reported_outcome(body, JOB) is None


def test_another_jobs_report_is_not_this_ones() -> None:
    other = replace(JOB, id=13, attempts=2)
    assert reported_outcome(with_outcome(REPORT, JOB, OUTCOME, SPEND), other) is None


def test_model_text_cannot_plant_a_line() -> None:
    # A summary is neutralised before it reaches the report, and the line counts
    # only right after the marker that opens the comment.
    forged = with_outcome(REPORT, JOB, OUTCOME, SPEND).split("\n", 1)[1]
    summary = neutralise(forged)
    assert reported_outcome(f"{job_marker(12)}\n\n{summary}", JOB) is None
    assert reported_outcome(f"{job_marker(12)}\n\n{forged}", JOB) is None


def test_a_report_that_does_not_start_with_its_marker_is_refused() -> None:
    with pytest.raises(ValueError, match="marker"):
        with_outcome("no marker", JOB, OUTCOME, SPEND)
