"""The pull request a job opens, as a reviewer reads it: its title, its body, its status.

Pure. The title is the commit's subject: the change, as the model's summary
line says it (`runner.subject`). The body leads with a status line (between
markers, so a CI repair can rewrite it alone) and, for incomplete work, what
is left; then who asked, one "Changes" section (the model's summary, its own
section headings folded into it, and the files changed), one "Verification"
section with what Neo itself measured (each test, build or lint command the
agent ran and how it ended, from the run's events, never the model's
account), the model, the cost and a link to the report; then `Fixes #N`, or
`Refs #N` when the work is incomplete, so merging it closes nothing yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt

from bot.github.markers import STATUS_END, STATUS_START
from bot.jobs import JobRequest, TriggerKind
from bot.worker.progress import Command
from bot.worker.rendering import format_duration, needed_line, run_link
from bot.worker.untrusted import close_fences, code_span, neutralise
from bot.worker.verification import KINDS, Kind, kinds
from runner.closing import inert_closing_keywords
from runner.git import DiffStat
from runner.job import JobResult
from runner.subject import files_subject
from runner.text import one_line
from runner.tools.checklist import ChecklistItem

__all__ = [
    "RunFacts",
    "comment_url",
    "cost_text",
    "pr_body",
    "pr_title",
    "status_block",
    "threadless_pr_body",
    "verification_lines",
    "with_status",
]

# GitHub refuses a pull request body longer than this; the summary gets what
# the rest leaves, and is cut with a note past it.
_MAX_BODY = 65_536 - 2_000
_MAX_LEFT = 30
_MAX_COMMANDS = 40
_MAX_FILES = 50

# Only the block structure matters: where headings and fences are.
_MARKDOWN = MarkdownIt("commonmark")
_MARKDOWN.core.ruler.disable(["inline", "text_join"])
# A model's section heading our own sections already stand for.
_OURS = re.compile(
    r"(?:summary|changes?|changes made|what (?:i )?changed|overview)\W*", re.IGNORECASE
)
_UNCHECKED = re.compile(r"^\s*[-*+]\s+\[ \]\s+(.+)$")


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What Neo saw of the run itself, beside the runner's result."""

    # Every bash command the agent ran, and how it ended, from the run's events.
    commands: tuple[Command, ...] = ()
    # The agent's checklist as it last stood.
    checklist: tuple[ChecklistItem, ...] = ()
    # The job's report (its comment on the thread), when it has one.
    report_url: str | None = None
    # The job's run page (NEO_PUBLIC_URL/runs/<id>), when it has one.
    run_url: str | None = None


def comment_url(web: str, repository: str, number: int, comment_id: int) -> str:
    """A comment's address on GitHub's web host `web` (GitHub sends /issues/N of a
    pull request on to /pull/N)."""
    return f"{web.rstrip('/')}/{repository}/issues/{number}#issuecomment-{comment_id}"


def pr_title(result: JobResult) -> str:
    """A new pull request's title: the commit's subject, which says what the change does.

    An open pull request keeps the title it has: a maintainer may have edited it.
    """
    paths = [f.path for f in result.diffstat.files] if result.diffstat else []
    title = result.subject or files_subject(paths)
    return inert_closing_keywords(" ".join(title.split()))


def status_block(line: str) -> str:
    """The body's status line, between the markers a CI repair finds it by."""
    return f"{STATUS_START}\n{line}\n{STATUS_END}"


def with_status(body: str, line: str) -> str:
    """`body` with its status line replaced by `line` (added first if it has none)."""
    start = body.find(STATUS_START)
    end = body.find(STATUS_END, start + 1) if start != -1 else -1
    if start == -1 or end == -1:
        return f"{status_block(line)}\n\n{body}"
    return body[:start] + status_block(line) + body[end + len(STATUS_END) :]


def cost_text(cost_usd: float | None) -> str:
    if cost_usd is None:
        return "unknown"
    return f"${cost_usd:.2f}" if cost_usd >= 0.01 else f"${cost_usd:.4f}"


def pr_body(result: JobResult, request: JobRequest, facts: RunFacts) -> str:
    """The body of a thread's pull request: status, what is left, who asked, the change,
    what Neo verified, what it cost; then what merging it closes."""
    number = request.thread.number
    asked = f"at the request of @{request.author} in #{number}"
    if request.instruction_from_workflow:
        asked = f"in a workflow run on #{number}, started by @{request.author}"
    if request.thread.is_pull_request and result.fork is not None:
        closing = _fork_basis(result, number)
    elif request.thread.is_pull_request:
        closing = f"Based on #{number}."
    elif result.incomplete:
        # Merging work with something left must not close the issue.
        closing = f"Refs #{number} (incomplete: merging this does not close it)"
    else:
        closing = f"Fixes #{number}"
    return _body(result, facts, [f"Neo made this change {asked}."], closing)


def threadless_pr_body(result: JobResult, request: JobRequest, facts: RunFacts) -> str:
    """The body of a job's pull request when no issue asked: what it was told, and did.

    Each run of the same schedule rewrites it: it tells the latest run.
    """
    if request.trigger is TriggerKind.SCHEDULE and not request.instruction_from_workflow:
        why = "on a schedule in `.github/neo.yml`; each run updates this pull request"
    elif request.trigger is TriggerKind.SCHEDULE:
        why = "on a workflow's schedule; each run updates this pull request"
    else:
        why = f"from a workflow run (`{_one_word(request.event)}`)"
    if request.author and not request.author.lower().endswith("[bot]"):
        why += f", at the request of @{request.author}"
    task = "\n".join(f"> {line}" for line in neutralise(request.instruction.strip()).splitlines())
    head = [f"Neo made this change {why}.", "## Task", task or "> _none_"]
    return _body(result, facts, head, None)


def _body(result: JobResult, facts: RunFacts, head: list[str], closing: str | None) -> str:
    # Who asked, then what is left of incomplete work, before anything else.
    parts = [status_block(_first_status(result, facts.report_url)), head[0]]
    if result.needed:
        parts.append(needed_line(result.needed))
    if result.incomplete:
        parts += _what_is_left(result, facts.checklist)
    parts += head[1:]
    tail = ["## Verification", *verification_lines(facts.commands), _footer(result, facts)]
    if closing is not None:
        tail.append(closing)
    files = _files(result)
    fixed = sum(len(part) + 2 for part in [*parts, *tail, files]) + 200
    parts += ["## Changes", _changes(result, _MAX_BODY - fixed)]
    if files:
        parts.append(files)
    return "\n\n".join([*parts, *tail])


def _first_status(result: JobResult, report_url: str | None) -> str:
    report = f" · [Neo's report]({report_url})" if report_url else ""
    if result.incomplete:
        why = neutralise(one_line(f"{result.error_kind}: {result.error_message or ''}", 300))
        return (
            f"**Status:** ⚠️ Incomplete: Neo stopped before it finished ({code_span(why)});"
            f" this is the work so far{report}"
        )
    return f"**Status:** ✅ Ready for review{report}"


def _what_is_left(result: JobResult, checklist: Sequence[ChecklistItem]) -> list[str]:
    """What is left, first: the open items of the summary's checklist (the wrap-up asks
    for one), else the steps of the agent's own checklist it did not finish."""
    left = [m[1].strip() for line in result.summary.splitlines() if (m := _UNCHECKED.match(line))]
    if not left:
        left = [item.content for item in checklist if item.status != "done"]
    if not left:
        return ["## What is left", "The summary below says what is left."]
    lines = [f"- [ ] {neutralise(one_line(text, 300))}" for text in left[:_MAX_LEFT]]
    if len(left) > _MAX_LEFT:
        lines.append(f"- … and {len(left) - _MAX_LEFT} more")
    return ["## What is left", "\n".join(lines)]


def _changes(result: JobResult, room: int) -> str:
    """The model's summary, its section headings folded, whole: its first line is the
    title of a new pull request, but an open one keeps the title it had."""
    text = _fold_headings(neutralise(result.summary.strip()))
    if not text.strip():
        return "_The agent gave no summary._"
    if len(text) > room:
        cut = text[: max(room - 200, 0)]
        cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
        shown = len(cut)
        text = close_fences(cut) + (
            f"\n\n_✂️ The summary was cut to fit GitHub's size limit: {shown:,} of"
            f" {len(text):,} characters shown; the report has it whole._"
        )
    if result.blocked_paths:
        text += "\n\nChanges to .github/workflows/ were left out: `allow_workflow_edits` is off."
    return text


def _fold_headings(markdown: str) -> str:
    """The model's headings as bold lines, and those our sections stand for dropped:
    the body has one "Changes" and one "Verification" heading, both Neo's."""
    lines = markdown.split("\n")
    drop: set[int] = set()
    for token in _MARKDOWN.parse(markdown):
        if token.type != "heading_open" or token.map is None or token.level != 0:
            continue
        start, end = token.map
        raw = " ".join(lines[start:end]) if token.markup.startswith("#") else lines[start]
        title = re.sub(r"^\s{0,3}#{1,6}\s*|\s+#+\s*$", "", raw).strip()
        if not title or _OURS.fullmatch(title):
            drop.update(range(start, end))
            if end < len(lines) and not lines[end].strip():
                drop.add(end)  # and the blank line after it
            continue
        # A blank line after it, so that a list right under it stays a list.
        lines[start] = f"**{title.strip('*_ ')}**\n"
        drop.update(range(start + 1, end))  # a setext heading's underline
        if end < len(lines) and not lines[end].strip():
            drop.add(end)
    return "\n".join(line for i, line in enumerate(lines) if i not in drop).strip("\n")


def _files(result: JobResult) -> str:
    """The files changed, folded: the numbers a reviewer checks the summary against."""
    stat = result.diffstat
    if stat is None:
        return ""
    rows = [f"{f.path} | +{f.insertions} -{f.deletions}" for f in stat.files[:_MAX_FILES]]
    if len(stat.files) > _MAX_FILES:
        rows.append(f"... {len(stat.files) - _MAX_FILES} more files")
    return (
        f"<details><summary>{_stat_line(stat)}</summary>\n\n```text\n"
        + "\n".join(rows)
        + "\n```\n\n</details>"
    )


def _stat_line(stat: DiffStat) -> str:
    noun = "file" if stat.files_changed == 1 else "files"
    return f"{stat.files_changed} {noun} changed, +{stat.insertions} −{stat.deletions}"


_MEASURED = (
    "The test, build and lint commands the agent ran, and how each ended, as Neo"
    " measured them (not the model's account):"
)
_NOTHING_RUN = (
    "The agent ran no test, build or lint command in this run: nothing here was"
    " checked by running it."
)


def verification_lines(
    commands: Sequence[Command], *, intro: str = _MEASURED, nothing: str = _NOTHING_RUN
) -> list[str]:
    """What Neo measured: each test, build or lint command the agent ran, and how it
    ended, with a warning for each kind whose last run failed."""
    checks = [command for command in commands if kinds(command.command)]
    if not checks:
        return [nothing]
    shown = checks[-_MAX_COMMANDS:]
    rows = [_command_line(command) for command in shown]
    if len(checks) > len(shown):
        rows.insert(0, f"- … {len(checks) - len(shown)} earlier commands")
    return [intro, "\n".join(rows), *_last_failures(checks)]


def _command_line(command: Command) -> str:
    text = code_span(one_line(command.command, 300))
    if command.timed_out:
        return f"- ⏱️ {text} → timed out"
    return f"- {'✅' if command.ok else '❌'} {text} → exit {command.exit_code}"


def _last_failures(checks: Sequence[Command]) -> list[str]:
    last: dict[Kind, int] = {}
    for index, command in enumerate(checks):
        for kind in kinds(command.command):
            last[kind] = index
    failed = [kind for kind in KINDS if kind in last and not checks[last[kind]].ok]
    if not failed:
        return []
    return [f"⚠️ The last {' and '.join(failed)} run failed."]


def _footer(result: JobResult, facts: RunFacts) -> str:
    fields = []
    if result.models:
        label = "Model" if len(result.models) == 1 else "Models"
        fields.append(f"{label}: {' then '.join(code_span(m) for m in result.models)}")
    fields.append(f"Cost: {cost_text(result.cost_usd)}")
    if result.num_turns:
        fields.append(f"{result.num_turns} model call{'s' if result.num_turns != 1 else ''}")
    if result.duration_ms:
        fields.append(format_duration(result.duration_ms / 1000))
    if facts.report_url:
        fields.append(f"[Neo's report]({facts.report_url})")
    if facts.run_url:
        fields.append(run_link(facts.run_url))
    return f"<sub>{' · '.join(fields)}</sub>"


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
