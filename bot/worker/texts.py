"""What a job writes for people: pull request bodies, the outcome its report tells.

Pure: from the runner's result and the request to Markdown and values. Model
text is untrusted and goes through `neutralise` before it reaches GitHub.
"""

from __future__ import annotations

from bot.github.markers import job_marker
from bot.jobs import Job, JobOutcome, JobRequest, JobState, TriggerKind, conclusion_of
from bot.worker.progress import Outcome, neutralise
from runner.errors import NeoError
from runner.git import DiffStat
from runner.job import JobResult
from runner.text import one_line

__all__ = [
    "diffstat",
    "error_line",
    "given_up_report",
    "pr_body",
    "run_outcome",
    "stored_outcome",
    "threadless_pr_body",
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
        generated=result.generated,
        usage=result.usage,
        cost_usd=result.cost_usd,
        duration_ms=result.duration_ms,
        num_turns=result.num_turns,
        models=result.models,
        fallback_reason=result.fallback_reason,
        notes=result.network_notes,
        blocked_hosts=result.network_blocked,
        config_path=config_path,
        fork=result.fork,
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


def diffstat(stat: DiffStat) -> str:
    lines = [f"{f.path} | +{f.insertions} -{f.deletions}" for f in stat.files[:50]]
    if len(stat.files) > 50:
        lines.append(f"... {len(stat.files) - 50} more files")
    lines.append(
        f"{stat.files_changed} file{'s' if stat.files_changed != 1 else ''} changed, "
        f"+{stat.insertions} -{stat.deletions}"
    )
    return "```\n" + "\n".join(lines) + "\n```"


def pr_body(result: JobResult, request: JobRequest) -> str:
    """The body of a thread's pull request: who asked where, and what was done."""
    number = request.thread.number
    asked = f"at the request of @{request.author} in #{number}"
    if request.instruction_from_workflow:
        asked = f"in a workflow run on #{number}, started by @{request.author}"
    parts = [f"Neo made this change {asked}.", *_what_was_done(result)]
    if request.thread.is_pull_request and result.fork is not None:
        parts.append(_fork_basis(result, number))
    elif request.thread.is_pull_request:
        parts.append(f"Based on #{number}.")
    else:
        parts.append(f"Fixes #{number}")
    return "\n\n".join(parts)


def threadless_pr_body(result: JobResult, request: JobRequest) -> str:
    """The body of a job's pull request when no issue asked: what it was told, and did.

    Each run of the same schedule rewrites it: it tells the latest run.
    """
    scheduled = request.trigger is TriggerKind.SCHEDULE
    if scheduled and not request.instruction_from_workflow:
        why = "on a schedule in `.github/neo.yml`; each run updates this pull request"
    elif scheduled:
        why = "on a workflow's schedule; each run updates this pull request"
    else:
        why = f"from a workflow run (`{_one_word(request.event)}`)"
    if request.author and not request.author.lower().endswith("[bot]"):
        why += f", at the request of @{request.author}"
    task = "\n".join(f"> {line}" for line in neutralise(request.instruction.strip()).splitlines())
    parts = [f"Neo made this change {why}.", "## Task", task or "> _none_"]
    return "\n\n".join([*parts, *_what_was_done(result)])


def _what_was_done(result: JobResult) -> list[str]:
    """A pull request body's summary, changed files and anything left out."""
    parts = ["## Summary", neutralise(result.summary.strip()) or "_The agent gave no summary._"]
    if result.incomplete:
        why = " ".join(f"{result.error_kind}: {result.error_message or ''}".split())
        parts[:0] = [
            f"> [!WARNING]\n> **Incomplete.** Neo stopped before it finished (`{neutralise(why)}`);"
            " this is the work so far, and the summary says what is left."
        ]
    if result.diffstat is not None:
        parts += ["## Changes", diffstat(result.diffstat)]
    if result.blocked_paths:
        parts.append("Changes to .github/workflows/ were left out: `allow_workflow_edits` is off.")
    return parts


def _fork_basis(result: JobResult, number: int) -> str:
    """What of fork pull request `number` this branch holds."""
    assert result.fork is not None
    basis = f"Based on #{number}, from a fork: its changes at `{result.fork.head[:12]}`"
    left_out = result.fork.left_out
    if not left_out:
        return f"{basis}."
    # The fork named these paths: the whole line is neutralised, code spans and all.
    named = ", ".join(f"`{path}`" for path in left_out[:20])
    more = f" and {len(left_out) - 20:,} more" if len(left_out) > 20 else ""
    return neutralise(
        f"{basis}, without its changes to CI configuration ({named}{more}), which never"
        " come into this repository from a fork."
    )


def _one_word(text: str) -> str:
    return "".join(c for c in text if c.isalnum() or c in "._-")[:60] or "unknown"
