"""What a job writes for people: the outcome its report tells, the given-up report.

Pure: from the runner's result and the request to Markdown and values. The
pull request's title and body: `bot.worker.pull_request`.
"""

from __future__ import annotations

from bot.github.markers import job_marker
from bot.jobs import Job, JobOutcome, JobState, conclusion_of
from bot.worker.progress import Outcome
from bot.worker.untrusted import code_span
from runner.errors import NeoError
from runner.job import JobResult
from runner.text import one_line

__all__ = [
    "error_line",
    "given_up_report",
    "run_outcome",
    "stored_outcome",
    "unpriced_notes",
]


def run_outcome(
    result: JobResult,
    *,
    pr_url: str | None,
    cancelled_by: str | None,
    config_path: str,
    draft_refused: bool = False,
) -> Outcome:
    """What the report tells of a run the runner finished."""
    summary = result.summary
    if result.blocked_paths:
        summary += (
            "\n\nNot pushed: changes to "
            + ", ".join(f"`{path}`" for path in result.blocked_paths)
            + f" (workflow edits are off in `{config_path}`: `allow_workflow_edits`)."
        )
    if result.wrap_up_failed is not None:
        before = " What is above is its last message before." if summary.strip() else ""
        summary += (
            "\n\nNo closing summary: the model's last word after the budget ran out was not"
            f" written ({result.wrap_up_failed}).{before}"
        )
    error = None
    if result.error_kind is not None:
        error = f"{result.error_kind}: {result.error_message or 'no detail'}"
    return Outcome(
        conclusion=conclusion_of(result),
        summary=summary,
        pr_url=pr_url,
        draft_refused=draft_refused,
        error=error,
        cancelled_by=cancelled_by,
        left_out=result.left_out,
        changed=result.changed,
        generated=result.generated,
        setup=result.setup,
        mcp=result.mcp,
        usage=result.usage,
        cost_usd=result.cost_usd,
        duration_ms=result.duration_ms,
        num_turns=result.num_turns,
        models=result.models,
        fallback_reason=result.fallback_reason,
        notes=(*result.network_notes, *unpriced_notes(result.unpriced, config_path)),
        needed=result.needed,
        blocked_hosts=result.network_blocked,
        config_path=config_path,
        fork=result.fork,
    )


def unpriced_notes(unpriced: tuple[tuple[str, int], ...], config_path: str) -> tuple[str, ...]:
    """A line for each model without a known price the run called: its calls are
    not in the cost the report shows (a run with a cost limit never makes one)."""
    return tuple(
        f"{code_span(model)} has no known price:"
        f" {'its call is' if calls == 1 else f'its {calls} calls are'} left out of the cost"
        f" shown; give its price under `prices:` in `{config_path}` to count"
        f" {'it' if calls == 1 else 'them'}."
        for model, calls in unpriced
    )


def stored_outcome(
    outcome: Outcome, report: str, *, branch: str | None, session_id: str | None
) -> JobOutcome:
    """What the queue keeps of a finished run; `neo action` makes its outputs of it."""
    return JobOutcome(
        conclusion=outcome.conclusion,
        error=outcome.error,
        pr_url=outcome.pr_url,
        review_url=outcome.review_url,
        branch=branch,
        session_id=session_id,
        cost_usd=outcome.cost_usd,
        report=report,
        cancelled_by=outcome.cancelled_by,
    )


def given_up_report(job: Job) -> str:
    """The report of a job the queue ended because its worker stopped answering."""
    reason = one_line(str((job.result.error if job.result else None) or ""), None)
    reason = reason or "its worker stopped answering"
    heading = "🛑 **Cancelled**" if job.state is JobState.CANCELLED else "❌ **Failed**"
    return "\n\n".join(
        [
            job_marker(job.id),
            heading,
            f"**Error:** {reason[0].upper()}{reason[1:].rstrip('.')}. Nothing more will be"
            " pushed for this request; mention Neo again to retry.",
        ]
    )


def error_line(error: NeoError) -> str:
    line = one_line(error, None)
    return f"{error.kind}: {line}"
