"""The progress comment's Markdown: the live progress while a job runs, then the report,
always within what GitHub accepts. Pure.

`render_progress` and `render_report` turn a `ProgressState` (and the job's
`Outcome`) into the comment; model text goes through `bot.worker.untrusted`
first. How it stays under GitHub's limit: docs/architecture.md, "The report".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.github.markers import job_marker
from bot.jobs import Conclusion
from bot.worker.fork_report import PROPOSED, fork_pushed_line, patch_section
from bot.worker.mcp_report import mcp_lines, skipped_lines
from bot.worker.network_report import blocked_lines
from bot.worker.progress import (
    FINAL,
    Command,
    Outcome,
    ProgressState,
    RunningChild,
    Status,
    Step,
    ToolCall,
    compacted,
)
from bot.worker.setup_report import setup_lines
from bot.worker.untrusted import close_fences, code_span, inline_markdown, neutralise
from bot.worker.verification import KINDS, Kind, kinds
from runner.text import one_line
from runner.tools.checklist import ChecklistItem

__all__ = [
    "MAX_COMMENT_CHARS",
    "format_duration",
    "needed_line",
    "render_progress",
    "render_report",
]


# GitHub rejects a comment body longer than this.
MAX_COMMENT_CHARS = 65_536
# What the renderers aim for, measured in UTF-16 code units (an emoji counts
# twice), with room to spare for notes and however GitHub counts.
_BUDGET = MAX_COMMENT_CHARS - 1_000


# --- rendering ------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    """`42s`, `4m 05s`, `1h 02m`."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _coarse(seconds: float) -> str:
    """Elapsed time for the live comment: whole minutes, so the clock alone
    changes the text (and costs an edit) at most once a minute."""
    minutes = int(max(0.0, seconds)) // 60
    if minutes == 0:
        return "less than a minute"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


_STATUS_LINE = {
    Status.QUEUED: "⏳ **Queued** — waiting for a free worker",
    Status.STARTING: "🚀 **Starting** — preparing the workspace",
    Status.WORKING: "🛠️ **Working**",
    Status.DONE: "✅ **Done**",
    Status.FAILED: "❌ **Failed**",
    Status.CANCELLED: "🛑 **Cancelled**",
}

_MAX_CHECKLIST = 50


def _checklist_lines(items: Iterable[ChecklistItem], *, ended: bool = False) -> list[str]:
    """The checklist as task-list lines; once the job `ended`, nothing is in progress:
    a step the model left so is simply not done."""
    lines = []
    for item in items:
        text = inline_markdown(item.content, 200)
        if item.status == "done":
            lines.append(f"- [x] {text}")
        elif item.status == "in_progress" and not ended:
            lines.append(f"- [ ] 🔄 {text} — _in progress_")
        else:
            lines.append(f"- [ ] {text}")
    return lines


def _step_text(step: Step) -> str:
    return code_span(step.text) if step.is_call else f"_{inline_markdown(step.text, 200)}_"


def render_progress(state: ProgressState, *, now: float) -> str:
    """The live comment: status and elapsed time, the checklist, the current step."""
    parts = [
        job_marker(state.job_id),
        f"{_STATUS_LINE[state.status]} · {_coarse(state.elapsed(now))}"
        + (f" · {run_link(state.run_url, live=True)}" if state.run_url else ""),
    ]
    if state.skills:
        parts.append(_skills_line(state.skills))
    checklist = _checklist_lines(state.checklist[:_MAX_CHECKLIST])
    if len(state.checklist) > _MAX_CHECKLIST:
        checklist.append(f"- … {len(state.checklist) - _MAX_CHECKLIST} more steps")
    if checklist:
        parts.append("\n".join(checklist))
    if state.step is not None and state.status not in FINAL:
        parts.append(f"**Now:** {_step_text(state.step)}")
    if state.children and state.status not in FINAL:
        parts.append("\n".join(_child_line(child) for child in state.children[:_MAX_CHILDREN]))
    if state.mcp_skipped and state.status not in FINAL:
        parts.append("\n".join(skipped_lines(state.mcp_skipped, code=code_span)))
    notes = []
    if state.calls:
        count = len(state.calls)
        notes.append(f"{count} tool call{'s' if count != 1 else ''} so far")
    if state.compactions:
        notes.append(compacted(*state.compactions[-1]))
    if notes:
        parts.append(f"<sub>{' · '.join(notes)}</sub>")
    return _clamp("\n\n".join(parts))


def _skills_line(names: Sequence[str]) -> str:
    return f"**Skills:** {', '.join(code_span(name) for name in names)}"


_MAX_CHILDREN = 16


def _child_line(child: RunningChild) -> str:
    calls = f" · model call {child.turns}" if child.turns else ""
    return f"- 🔎 subagent {child.number}: {inline_markdown(child.description, 120)}{calls}"


# A URL that is a link destination as it stands: no space, bracket or
# parenthesis could end it early.
_URL = re.compile(r"https?://[^\s<>()\[\]`\\\x00-\x1f\x7f]+")
_PULL_NUMBER = re.compile(r"/pull/(\d+)/?$")


def _pull_request_link(url: str) -> str:
    """The pull request as a Markdown link to its URL, as GitHub gave it: `[#9](...)`.

    Anything else is shown as code, so it cannot turn into other Markdown.
    """
    if not _URL.fullmatch(url):
        return code_span(url)
    number = _PULL_NUMBER.search(url)
    text = f"#{number[1]}" if number else url
    return f"[{text}]({url})"


def _heading(outcome: Outcome, duration: float | None) -> str:
    proposed = outcome.fork is not None and outcome.fork.proposed
    if outcome.conclusion is Conclusion.SUCCESS:
        line = "✅ **Done**"
        if outcome.pr_url:
            line += f" — pull request: {_pull_request_link(outcome.pr_url)}"
        elif proposed:
            line += f" — {PROPOSED}"
    elif outcome.conclusion is Conclusion.NO_CHANGES:
        line = "✅ **Done** — no changes to the repository, so no pull request"
    elif outcome.conclusion is Conclusion.INCOMPLETE:
        line = "⚠️ **Incomplete**"
        if outcome.pr_url:
            line += f" — the work so far: {_pull_request_link(outcome.pr_url)}"
        elif proposed:
            line += f" — the work so far: {PROPOSED}"
    elif outcome.conclusion in (Conclusion.FAILED, Conclusion.UNAUTHORISED):
        line = "❌ **Failed**"
    elif outcome.conclusion is Conclusion.STOPPED:
        line = "✅ **Stopped**"
    else:
        line = "🛑 **Cancelled**"
        if outcome.cancelled_by:
            line += f" by {inline_markdown('@' + outcome.cancelled_by, 100)}"
    if duration is not None:
        line += f" · {format_duration(duration)}"
    return line


def run_link(url: str, *, live: bool = False) -> str:
    """A link to the job's run page; a URL that is not plainly one is shown as code."""
    if not _URL.fullmatch(url):
        return code_span(url)
    return f"[{'Watch it live' if live else 'The run'}]({url})"


def _footer(outcome: Outcome, duration: float | None, run_url: str | None = None) -> str:
    usage = outcome.usage
    tokens = f"{usage.input_tokens:,} in · {usage.output_tokens:,} out"
    if usage.cache_read_input_tokens or usage.cache_creation_input_tokens:
        tokens += (
            f" (+ cache: {usage.cache_read_input_tokens:,} read,"
            f" {usage.cache_creation_input_tokens:,} written)"
        )
    if outcome.cost_usd is None:
        cost = "unknown"
    else:
        cost = (
            f"${outcome.cost_usd:.2f}" if outcome.cost_usd >= 0.01 else f"${outcome.cost_usd:.4f}"
        )
    fields = [f"Tokens: {tokens}", f"Cost: {cost}"]
    if outcome.models:
        label = "Model" if len(outcome.models) == 1 else "Models"
        fields.insert(0, f"{label}: {' then '.join(code_span(m) for m in outcome.models)}")
    if duration is not None:
        fields.append(f"Duration: {format_duration(duration)}")
    if outcome.num_turns:
        fields.append(f"{outcome.num_turns} model call{'s' if outcome.num_turns != 1 else ''}")
    if run_url:
        fields.append(run_link(run_url))
    return f"<sub>{' · '.join(fields)}</sub>"


def _command_line(command: Command) -> str:
    if command.timed_out:
        return f"- ⏱️ {code_span(one_line(command.command, 300))} → timed out"
    mark = "✅" if command.ok else "❌"
    return f"- {mark} {code_span(one_line(command.command, 300))} → exit {command.exit_code}"


def _failed_checks(checks: Sequence[Command]) -> list[str]:
    """A warning for each kind of check (test, build, lint) whose last run failed.

    A command of several kinds (`ruff check . && pytest`) is one warning.
    """
    last: dict[Kind, int] = {}
    for index, command in enumerate(checks):
        for kind in kinds(command.command):
            last[kind] = index
    failed: dict[int, list[Kind]] = {}
    for kind in KINDS:
        at = last.get(kind)
        if at is not None and not checks[at].ok:
            failed.setdefault(at, []).append(kind)
    lines = []
    for index, failed_kinds in sorted(failed.items()):
        command = checks[index]
        ended = "timed out" if command.timed_out else f"exited {command.exit_code}"
        lines.append(
            f"⚠️ The last {' and '.join(failed_kinds)} run failed:"
            f" {code_span(one_line(command.command, 300))} {ended}."
        )
    return lines


def _call_line(call: ToolCall) -> str:
    """A call in the report. One still running when the job ended never finished (the
    job was stopped, or failed, under it): a finished report shows nothing running."""
    mark = {"ok": "✅", "error": "❌", "running": "⏹️"}[call.state]
    line = f"- {mark} {code_span(call.summary)}"
    if call.state == "running":
        line += " → did not finish"
    elif call.timed_out:
        line += " → timed out"
    elif call.exit_code is not None:
        line += f" → exit {call.exit_code}"
    return line


def needed_line(needed: Sequence[str]) -> str:
    """What the agent lacked, for a maintainer to grant: one line, the model's words as data."""
    return "**Needed:** " + "; ".join(neutralise(one_line(what, 300)) for what in needed)


def render_report(state: ProgressState, outcome: Outcome) -> str:
    """The final comment: outcome, PR, summary, what was verified, the tool
    calls, tokens, cost and duration; within GitHub's size limit."""
    duration: float | None = None
    if outcome.duration_ms is not None:
        duration = outcome.duration_ms / 1000
    elif state.ended_at is not None:
        duration = state.elapsed(state.ended_at)

    checks = [command for command in state.commands if kinds(command.command)]
    sections: list[str | _Part] = [job_marker(state.job_id), _heading(outcome, duration)]
    if state.skills:
        sections.append(_skills_line(state.skills))
    if outcome.conclusion is Conclusion.FAILED:
        sections.append(
            f"**Error:** {code_span(one_line(outcome.error or 'unknown error', 1_000))}"
        )
    elif outcome.conclusion is Conclusion.INCOMPLETE:
        stopped = code_span(one_line(outcome.error or "a budget ran out", 1_000))
        kind = "pull request" if outcome.draft_refused else "draft pull request"
        if outcome.fork is not None and outcome.fork.proposed:
            kind = "patch below"
        sections.append(
            f"**Stopped before the end:** {stopped}. The {kind} holds the work"
            " so far; the summary says what is left. Mention Neo on it to go on."
        )
    if outcome.needed:
        sections.append(needed_line(outcome.needed))
    if outcome.draft_refused and outcome.pr_url:
        sections.append(
            "ℹ️ This repository does not allow draft pull requests (GitHub allows them on"
            " public repositories and on paid plans), so this one is a regular pull request:"
            " it is ready for review as soon as it is opened."
        )
    if len(outcome.models) > 1:
        first, *rest = outcome.models
        why = code_span(one_line(outcome.fallback_reason or "unavailable", 300))
        sections.append(
            f"ℹ️ {code_span(first)} was unavailable ({why}), so the fallback"
            f" {code_span(rest[-1])} did the rest of the work."
        )
    sections.extend(f"ℹ️ {note}" for note in outcome.notes)
    if outcome.fork is not None and (pushed := fork_pushed_line(outcome.fork, code=code_span)):
        sections.append(f"ℹ️ {pushed}")
    if outcome.blocked_hosts:
        blocked = blocked_lines(
            outcome.blocked_hosts, config_path=outcome.config_path, code=code_span
        )
        sections.append("\n".join(blocked))
    sections.extend(setup_lines(outcome.setup, code=code_span, config_path=outcome.config_path))
    sections.extend(mcp_lines(outcome.mcp, code=code_span))
    # Beside the summary, which may say the opposite: the model's word is not proof.
    # Only where code changed: a review or an answer claims no change to verify.
    warnings = _failed_checks(checks) if outcome.changed else []
    if warnings:
        sections.append("\n".join(warnings))
    if outcome.summary.strip():
        original = outcome.summary.strip()
        # Never more than twice what the comment holds, before the costlier
        # work: a longer summary is cut again below, with a note.
        summary = close_fences(neutralise(_head(original, 2 * _BUDGET)))
        total = len(original)
        part = _Part(summary, lambda limit: _cut_summary(summary, limit, total))
        sections.append(part)
    if outcome.fork is not None and outcome.fork.proposed:
        patch, short = patch_section(outcome.fork, config_path=outcome.config_path, code=code_span)
        # Whole or not at all: a patch cut short would not apply.
        sections.append(_Part(patch, lambda limit: short))
    if outcome.left_out or outcome.generated:
        lines = [
            f"- Left out: {code_span(path.rstrip('/') + '/')} (a git repository of its own)"
            for path in outcome.left_out
        ]
        if outcome.generated:
            lines.append(_generated_line(outcome.generated))
        sections.append(_lines_part(lines, "head", "left-out directories"))
    if state.checklist:
        sections.append("**Checklist**")
        checklist = _checklist_lines(state.checklist, ended=True)
        sections.append(_lines_part(checklist, "head", "more steps"))
    if outcome.changed:
        sections.append("**What was verified**")
        if checks:
            lines = [_command_line(command) for command in checks]
            sections.append(_lines_part(lines, "tail", "earlier commands"))
        else:
            sections.append("_No tests, builds or linters were run._")
    if state.calls:
        count = len(state.calls)
        sections.append(f"<details><summary>{count} tool call{'s' if count != 1 else ''}</summary>")
        sections.append(_lines_part([_call_line(call) for call in state.calls], "ends", "calls"))
        sections.append("</details>")
    sections.append(_footer(outcome, duration, state.run_url))
    return _clamp(_fit(sections, _BUDGET))


def _generated_line(generated: Sequence[tuple[str, int]]) -> str:
    files = sum(count for _, count in generated)
    kinds = ", ".join(code_span(kind) for kind, _ in generated)
    noun = "file" if files == 1 else "files"
    return (
        f"- Left out: {files:,} generated {noun} ({kinds}):"
        " caches and build output are not committed"
    )


# --- staying under GitHub's limit -------------------------------------------------


def _units(text: str) -> int:
    """Length in UTF-16 code units: the stricter of the ways GitHub may count."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _head(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` units."""
    if limit <= 0:
        return ""
    data = text.encode("utf-16-le", "surrogatepass")[: 2 * limit]
    return data.decode("utf-16-le", "ignore")


@dataclass(frozen=True, slots=True)
class _Part:
    """A section that may be shortened: its text, and how to cut it to a size."""

    text: str
    cut: Callable[[int], str]


def _lines_part(lines: Sequence[str], keep: Literal["head", "tail", "ends"], noun: str) -> _Part:
    return _Part("\n".join(lines), lambda limit: _cut_lines(lines, limit, keep, noun))


def _cut_lines(
    lines: Sequence[str], limit: int, keep: Literal["head", "tail", "ends"], noun: str
) -> str:
    """Whole lines within `limit`, and a line saying how many were left out."""
    room = limit - 80  # the note
    head: list[str] = []
    tail: list[str] = []
    left, right = 0, len(lines) - 1
    take_head = keep != "tail"
    while left <= right:
        line = lines[left] if take_head else lines[right]
        cost = _units(line) + 1
        if cost > room:
            break
        room -= cost
        if take_head:
            head.append(line)
            left += 1
        else:
            tail.append(line)
            right -= 1
        if keep == "ends":
            take_head = not take_head
    omitted = len(lines) - len(head) - len(tail)
    note = f"- … {omitted:,} {noun} not shown (the comment would exceed GitHub's size limit)"
    return "\n".join([*head, note, *reversed(tail)])


def _cut_summary(summary: str, limit: int, total: int) -> str:
    """The start of `summary` within `limit`, cut at a line, fences closed, with a note."""
    room = limit - 200  # the note
    head = ""
    while room > 0:
        head = _head(summary, room)
        if "\n" in head:
            head = head[: head.rindex("\n")]
        head = close_fences(head)
        if _units(head) <= room:
            break
        room -= _units(head) - room  # the closing fence took the room: cut more
        head = ""
    note = (
        f"_✂️ The summary was cut to fit GitHub's comment size limit: {len(head):,}"
        f" of {total:,} characters shown._"
    )
    return f"{head}\n\n{note}" if head else note


def _fit(sections: Sequence[str | _Part], budget: int) -> str:
    """Join `sections`, cutting the longest parts first until the whole fits.

    Every cut part gets the same cap, the largest that fits: parts shorter
    than it stay whole (water-filling), so one huge list does not starve the
    summary, nor the other way round.
    """
    separators = 2 * (len(sections) - 1)
    fixed = sum(_units(s) for s in sections if isinstance(s, str)) + separators
    parts = [s for s in sections if isinstance(s, _Part)]
    sizes = [_units(part.text) for part in parts]
    available = budget - fixed
    if sum(sizes) <= available:
        return "\n\n".join(s if isinstance(s, str) else s.text for s in sections)
    low, high = 0, max(sizes)
    while low < high:
        cap = (low + high + 1) // 2
        if sum(min(size, cap) for size in sizes) <= available:
            low = cap
        else:
            high = cap - 1
    cap = low
    out = []
    for section in sections:
        if isinstance(section, str):
            out.append(section)
        elif _units(section.text) <= cap:
            out.append(section.text)
        else:
            out.append(section.cut(cap))
    return "\n\n".join(out)


def _clamp(text: str) -> str:
    """A last guard: never hand GitHub a body it would refuse."""
    if _units(text) <= _BUDGET:
        return text
    return _head(text, _BUDGET - 100) + "\n\n_✂️ Cut to fit GitHub's comment size limit._"
