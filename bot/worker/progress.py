"""The one comment of a job: live progress while it runs, then the report. Pure.

`Progress` folds the agent's events into state, `render_progress` and `render_report`
turn it into Markdown, `Throttle` says when an edit is worth a call; the worker owns
the clock and the GitHub calls. How model text is defused: docs/architecture.md, "The report".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from markdown_it import MarkdownIt

from bot.github.markers import job_id_of, job_marker
from bot.jobs import Conclusion
from bot.worker.fork_report import PROPOSED, fork_pushed_line, patch_section
from bot.worker.network_report import blocked_lines
from bot.worker.setup_report import setup_lines
from bot.worker.verification import KINDS, Kind, kinds
from runner.agent.events import (
    Compacted,
    Event,
    ProviderRetry,
    ToolFinished,
    ToolNotice,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from runner.fork import ForkResult
from runner.headless import RunResult
from runner.llm.types import Usage
from runner.network import Blocked
from runner.sandbox.setup_plan import SetupOutcome
from runner.skills import SkillsInvoked
from runner.subagent import ChildFinished, ChildStarted, ChildTurn
from runner.text import one_line
from runner.tools.checklist import ChecklistChanged, ChecklistItem

__all__ = [
    "MAX_COMMENT_CHARS",
    "Command",
    "Conclusion",
    "Outcome",
    "Progress",
    "ProgressState",
    "RunningChild",
    "Status",
    "Step",
    "Throttle",
    "ToolCall",
    "describe_call",
    "format_duration",
    "job_id_of",
    "job_marker",
    "neutralise",
    "render_progress",
    "render_report",
]

# GitHub rejects a comment body longer than this.
MAX_COMMENT_CHARS = 65_536
# What the renderers aim for, measured in UTF-16 code units (an emoji counts
# twice), with room to spare for notes and however GitHub counts.
_BUDGET = MAX_COMMENT_CHARS - 1_000

ZWSP = "\u200b"

# --- neutralising model text --------------------------------------------------

_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9])")
# `<` opening a tag, a closing tag, a comment or a declaration; not an autolink.
_TAG = re.compile(r"<(?=[A-Za-z/!?])(?![A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>)")
_CLOSING = re.compile(
    r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
    r"(?=:?\s+(?:#\d|gh-\d|[\w.-]+/[\w.-]+#\d|https?://))",
    re.IGNORECASE,
)
_NEWLINES = re.compile(r"\r\n?")
# Only the block structure matters here: where fences are.
_MARKDOWN = MarkdownIt("commonmark").enable("table")
_MARKDOWN.core.ruler.disable(["inline", "text_join"])


def _defuse(text: str) -> str:
    """Break every mention, closing keyword and HTML opener in `text`."""
    text = _MENTION.sub("@" + ZWSP, text)
    text = _TAG.sub("<" + ZWSP, text)
    return _CLOSING.sub(lambda m: m[1][0] + ZWSP + m[1][1:], text)


def _fenced_lines(text: str) -> set[int]:
    """The lines inside fenced code blocks, fences included, as CommonMark sees them.

    Indented code blocks are not counted: GitHub's footnotes can make a
    paragraph of what CommonMark calls indented code, so they are neutralised.
    """
    lines: set[int] = set()
    for token in _MARKDOWN.parse(text):
        if token.type == "fence" and token.map is not None:
            lines.update(range(*token.map))
    return lines


def neutralise(markdown: str) -> str:
    """`markdown` as GitHub will show it, minus pings, closing keywords and raw HTML.

    Breaking an HTML block can turn lines that were raw HTML into Markdown
    and change where fences are, so then the result is parsed again, until
    it is stable: the text is only ever added to, so this ends. The other
    breaks (inside a word, after an `@`) change no block.
    """
    text = _NEWLINES.sub("\n", markdown).replace("\0", "\ufffd")
    while True:
        fenced = _fenced_lines(text)
        out: list[str] = []
        prose: list[str] = []
        html = False
        for number, line in enumerate([*text.split("\n"), None]):
            if line is not None and number not in fenced:
                prose.append(line)
                continue
            if prose:
                chunk = "\n".join(prose)
                html = html or _TAG.search(chunk) is not None
                out.append(_defuse(chunk))
                prose = []
            if line is not None:
                out.append(line)
        text = "\n".join(out)
        if not html:
            return text


_SENTINEL = "neo-end-of-text"


def _open_fence(text: str) -> tuple[str, str] | None:
    """The prefix and markup of a fence still open at the end of `text`."""
    tokens = _MARKDOWN.parse(f"{text}\n\n{_SENTINEL}")
    sentinel = text.count("\n") + 2
    for token in tokens:
        if token.type == "fence" and token.map is not None and token.map[1] > sentinel:
            opener = text.split("\n")[token.map[0]]
            column = max(opener.find(token.markup), 0)
            # Keep blockquote markers, blank out list markers.
            return re.sub(r"[^>\s]", " ", opener[:column]), token.markup
    return None


def _close_fences(text: str) -> str:
    """`text` with a fence left open at its end closed, so it cannot swallow what follows."""
    opened = _open_fence(text)
    if opened is None:
        return text
    prefix, markup = opened
    for closer in (f"\n{prefix}{markup}", f"\n{markup}", "\n"):
        if _open_fence(text + closer) is None:
            return text + closer
    return text  # only the look of what follows would suffer


# --- one-liners -----------------------------------------------------------------

_BACKTICKS = re.compile(r"`+")

_SUBJECT = {
    "bash": "command",
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "grep": "pattern",
    "glob": "pattern",
    "agent": "description",
}


def describe_call(name: str, args: Mapping[str, object]) -> str:
    """A tool call as one line: `bash: pytest -q`, `edit_file: src/app.py`."""
    subject: object = None
    if name == "workflow":
        items = args.get("items")
        if isinstance(items, list):
            subject = f"{len(items)} items"
    elif name in _SUBJECT:
        subject = args.get(_SUBJECT[name])
        where = args.get("path")
        if name in ("grep", "glob") and isinstance(where, str) and where not in ("", "."):
            subject = f"{subject} in {where}"
    else:
        subject = next((value for value in args.values() if isinstance(value, str)), None)
    if not isinstance(subject, str) or not subject.strip():
        return one_line(name, 120)
    return one_line(f"{name}: {subject}", 120)


def _code(text: str) -> str:
    """`text` as one inline code span it cannot break out of.

    Nothing in a code span pings, links or closes, so the text stays as the
    agent typed it, copyable.
    """
    text = one_line(text, 10_000) or "(empty)"
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(text: str, limit: int) -> str:
    """Model text for one line of Markdown: a checklist item, a note."""
    return _defuse(one_line(text, limit))


# --- state ----------------------------------------------------------------------


class Status(StrEnum):
    QUEUED = "queued"
    STARTING = "starting"
    WORKING = "working"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


_FINAL = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})


_STATUS_OF = {
    Conclusion.SUCCESS: Status.DONE,
    Conclusion.NO_CHANGES: Status.DONE,
    Conclusion.INCOMPLETE: Status.DONE,
    Conclusion.FAILED: Status.FAILED,
    Conclusion.CANCELLED: Status.CANCELLED,
    Conclusion.UNAUTHORISED: Status.FAILED,
    Conclusion.STOPPED: Status.DONE,
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_id: str
    name: str
    summary: str  # describe_call's one-liner
    state: Literal["running", "ok", "error"] = "running"
    # bash only: how the command ended.
    exit_code: int | None = None
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """A command the agent ran with bash, and how it ended."""

    command: str
    exit_code: int | None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True, slots=True)
class Step:
    """What the job is doing now: a tool call (shown as code) or a note."""

    text: str
    is_call: bool = False


THINKING = Step("thinking")


@dataclass(frozen=True, slots=True)
class RunningChild:
    """A subagent at work: its number in the run, its task, its model calls so far."""

    number: int
    description: str
    turns: int = 0


@dataclass(frozen=True, slots=True)
class ProgressState:
    job_id: str
    status: Status
    created_at: float
    started_at: float | None
    ended_at: float | None
    checklist: tuple[ChecklistItem, ...]
    step: Step | None
    calls: tuple[ToolCall, ...]
    commands: tuple[Command, ...]
    turns: int
    # Each compaction of the conversation: tokens before and after.
    compactions: tuple[tuple[int, int], ...] = ()
    # The skills the request invoked: the job's label.
    skills: tuple[str, ...] = ()
    # The subagents running now, in the order they started.
    children: tuple[RunningChild, ...] = ()

    def elapsed(self, now: float) -> float:
        """Seconds since the job started (or was queued), frozen once it ended."""
        since = self.started_at if self.started_at is not None else self.created_at
        until = self.ended_at if self.ended_at is not None else now
        return max(0.0, until - since)


_EXIT = re.compile(r"exit code: (-?\d+)")


def _bash_ending(output: str) -> tuple[int | None, bool]:
    """The exit code and whether it timed out, from the last lines bash's tool appends."""
    lines = output.rstrip("\n").split("\n")
    timed_out = lines[-1].startswith("timed out after ")
    if timed_out:
        lines.pop()
    match = _EXIT.fullmatch(lines[-1]) if lines else None
    return (int(match[1]) if match else None), timed_out


class Progress:
    """A job's progress, folded from the agent's events. Not thread-safe: feed
    it from the loop that runs the agent."""

    def __init__(self, job_id: int | str, *, clock: Callable[[], float]) -> None:
        job_marker(job_id)  # refuses an id the marker cannot carry
        self._job_id = str(job_id)
        self._clock = clock
        self._status = Status.QUEUED
        self._created_at = clock()
        self._started_at: float | None = None
        self._ended_at: float | None = None
        self._checklist: tuple[ChecklistItem, ...] = ()
        self._step: Step | None = None
        self._calls: list[ToolCall] = []
        self._index: dict[str, int] = {}
        self._running: dict[str, Step] = {}
        self._bash: dict[str, str] = {}
        self._commands: list[Command] = []
        self._turns = 0
        self._compactions: list[tuple[int, int]] = []
        self._skills: tuple[str, ...] = ()
        self._children: dict[int, RunningChild] = {}

    @property
    def state(self) -> ProgressState:
        return ProgressState(
            job_id=self._job_id,
            status=self._status,
            created_at=self._created_at,
            started_at=self._started_at,
            ended_at=self._ended_at,
            checklist=self._checklist,
            step=self._step,
            calls=tuple(self._calls),
            commands=tuple(self._commands),
            turns=self._turns,
            compactions=tuple(self._compactions),
            skills=self._skills,
            children=tuple(self._children.values()),
        )

    def start(self) -> None:
        """The worker took the job and prepares its workspace."""
        if self._status in (Status.QUEUED, Status.STARTING):
            self._status = Status.STARTING
            self._started_at = self._clock()

    def note(self, text: str) -> None:
        """Show what the worker itself is doing, e.g. "pushing the branch"."""
        if self._status not in _FINAL:
            self._step = Step(text)

    def finish(self, conclusion: Conclusion) -> None:
        """The job ended; later events change nothing."""
        if self._status in _FINAL:
            return
        self._status = _STATUS_OF[conclusion]
        self._ended_at = self._clock()
        self._step = None

    def apply(self, event: Event) -> None:
        if self._status in _FINAL:
            return
        if self._status is not Status.WORKING:
            self._status = Status.WORKING
            if self._started_at is None:
                self._started_at = self._clock()
        if isinstance(event, TurnStarted):
            self._turns = max(self._turns, event.turn)
            self._step = self._current()
        elif isinstance(event, ProviderRetry):
            reason = one_line(event.reason, 120)
            self._step = Step(
                f"the model provider failed ({reason}); falling back to {event.fallback}"
                if event.fallback
                else f"the model provider failed ({reason}); retry {event.attempt} in"
                f" {event.delay:.0f}s"
            )
        elif isinstance(event, ToolStarted):
            self._started(event)
        elif isinstance(event, ToolFinished):
            self._finished(event)
        elif isinstance(event, ToolNotice):
            self._notice(event.payload)
        elif isinstance(event, Compacted):
            self._compactions.append((event.tokens_before, event.tokens_after))
            self._step = Step(_compacted(event.tokens_before, event.tokens_after))
        elif isinstance(event, TurnFinished):
            self._running.clear()
            self._children.clear()
            self._step = None

    def _notice(self, payload: object) -> None:
        if isinstance(payload, ChecklistChanged):
            self._checklist = payload.items
        elif isinstance(payload, ChildStarted):
            self._children[payload.number] = RunningChild(payload.number, payload.description)
        elif isinstance(payload, ChildTurn) and payload.number in self._children:
            child = self._children[payload.number]
            self._children[payload.number] = replace(child, turns=payload.turn)
        elif isinstance(payload, ChildFinished):
            self._children.pop(payload.number, None)
        elif isinstance(payload, SkillsInvoked):
            self._skills = payload.names

    def _current(self) -> Step:
        """The latest call still running, else thinking."""
        return next(reversed(self._running.values()), THINKING)

    def _started(self, event: ToolStarted) -> None:
        summary = describe_call(event.name, event.args)
        self._index[event.call_id] = len(self._calls)
        self._calls.append(ToolCall(event.call_id, event.name, summary))
        command = event.args.get("command")
        if event.name == "bash" and isinstance(command, str):
            self._bash[event.call_id] = command
        self._running[event.call_id] = Step(summary, is_call=True)
        self._step = self._running[event.call_id]

    def _finished(self, event: ToolFinished) -> None:
        index = self._index.get(event.call_id)
        if index is None:  # a result without a start: still worth listing
            index = self._index[event.call_id] = len(self._calls)
            self._calls.append(ToolCall(event.call_id, event.name, describe_call(event.name, {})))
        call = replace(self._calls[index], state="error" if event.is_error else "ok")
        if event.name == "bash":
            exit_code, timed_out = _bash_ending(event.output)
            call = replace(call, exit_code=exit_code, timed_out=timed_out)
            if exit_code not in (None, 0) or timed_out:
                call = replace(call, state="error")
            command = self._bash.pop(event.call_id, None)
            # A call refused before it ran (bad arguments) verified nothing.
            if command is not None and (exit_code is not None or timed_out):
                self._commands.append(Command(command, exit_code, timed_out))
        self._calls[index] = call
        self._running.pop(event.call_id, None)
        self._step = self._current()


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


def _checklist_lines(items: Iterable[ChecklistItem]) -> list[str]:
    lines = []
    for item in items:
        text = _inline(item.content, 200)
        if item.status == "done":
            lines.append(f"- [x] {text}")
        elif item.status == "in_progress":
            lines.append(f"- [ ] 🔄 {text} — _in progress_")
        else:
            lines.append(f"- [ ] {text}")
    return lines


def _step_text(step: Step) -> str:
    return _code(step.text) if step.is_call else f"_{_inline(step.text, 200)}_"


def render_progress(state: ProgressState, *, now: float) -> str:
    """The live comment: status and elapsed time, the checklist, the current step."""
    parts = [
        job_marker(state.job_id),
        f"{_STATUS_LINE[state.status]} · {_coarse(state.elapsed(now))}",
    ]
    if state.skills:
        parts.append(_skills_line(state.skills))
    checklist = _checklist_lines(state.checklist[:_MAX_CHECKLIST])
    if len(state.checklist) > _MAX_CHECKLIST:
        checklist.append(f"- … {len(state.checklist) - _MAX_CHECKLIST} more steps")
    if checklist:
        parts.append("\n".join(checklist))
    if state.step is not None and state.status not in _FINAL:
        parts.append(f"**Now:** {_step_text(state.step)}")
    if state.children and state.status not in _FINAL:
        parts.append("\n".join(_child_line(child) for child in state.children[:_MAX_CHILDREN]))
    notes = []
    if state.calls:
        count = len(state.calls)
        notes.append(f"{count} tool call{'s' if count != 1 else ''} so far")
    if state.compactions:
        notes.append(_compacted(*state.compactions[-1]))
    if notes:
        parts.append(f"<sub>{' · '.join(notes)}</sub>")
    return _clamp("\n\n".join(parts))


def _skills_line(names: Sequence[str]) -> str:
    return f"**Skills:** {', '.join(_code(name) for name in names)}"


_MAX_CHILDREN = 16


def _child_line(child: RunningChild) -> str:
    calls = f" · model call {child.turns}" if child.turns else ""
    return f"- 🔎 subagent {child.number}: {_inline(child.description, 120)}{calls}"


def _compacted(before: int, after: int) -> str:
    return f"compacted the conversation ({before:,} → {after:,} tokens)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How a job ended, as the report tells it."""

    conclusion: Conclusion
    # The model's final answer: untrusted, neutralised when rendered.
    summary: str = ""
    pr_url: str | None = None
    # The one review a review job submitted.
    review_url: str | None = None
    # The repository allows no draft pull requests: `pr_url` is a regular one.
    draft_refused: bool = False
    # One line: why it failed.
    error: str | None = None
    # Login of who stopped it.
    cancelled_by: str | None = None
    # Directories the agent made repositories of their own, left out of the commit.
    left_out: tuple[str, ...] = ()
    # Untracked caches and build output left out of the commit: (kind, files).
    generated: tuple[tuple[str, int], ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    duration_ms: int | None = None
    num_turns: int | None = None
    # The models that did the work, in order, and why a fallback took over.
    models: tuple[str, ...] = ()
    fallback_reason: str | None = None
    # Lines of the service's own about the run (a budget's ceiling or allowance).
    notes: tuple[str, ...] = ()
    # Hosts the egress proxy refused, with the commands that tried; where the config is.
    blocked_hosts: tuple[Blocked, ...] = ()
    config_path: str = ".github/neo.yml"
    # A fork's pull request: the change proposed as a patch, or what the push left out.
    fork: ForkResult | None = None
    # What the setup phase did (None: no setup phase).
    setup: SetupOutcome | None = None

    @classmethod
    def from_run(
        cls,
        result: RunResult,
        *,
        conclusion: Conclusion,
        pr_url: str | None = None,
        cancelled_by: str | None = None,
    ) -> Outcome:
        error = None
        if result.error_type is not None:
            error = f"{result.error_type}: {result.error_message or 'no detail'}"
        return cls(
            conclusion=conclusion,
            summary=result.result,
            pr_url=pr_url,
            error=error,
            cancelled_by=cancelled_by,
            usage=result.usage,
            cost_usd=result.cost_usd,
            duration_ms=result.duration_ms,
            num_turns=result.num_turns,
        )


# A URL that is a link destination as it stands: no space, bracket or
# parenthesis could end it early.
_URL = re.compile(r"https?://[^\s<>()\[\]`\\\x00-\x1f\x7f]+")
_PULL_NUMBER = re.compile(r"/pull/(\d+)/?$")


def _pull_request_link(url: str) -> str:
    """The pull request as a Markdown link to its URL, as GitHub gave it: `[#9](...)`.

    Anything else is shown as code, so it cannot turn into other Markdown.
    """
    if not _URL.fullmatch(url):
        return _code(url)
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
            line += f" by {_inline('@' + outcome.cancelled_by, 100)}"
    if duration is not None:
        line += f" · {format_duration(duration)}"
    return line


def _footer(outcome: Outcome, duration: float | None) -> str:
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
        fields.insert(0, f"{label}: {' then '.join(_code(m) for m in outcome.models)}")
    if duration is not None:
        fields.append(f"Duration: {format_duration(duration)}")
    if outcome.num_turns:
        fields.append(f"{outcome.num_turns} model call{'s' if outcome.num_turns != 1 else ''}")
    return f"<sub>{' · '.join(fields)}</sub>"


def _command_line(command: Command) -> str:
    if command.timed_out:
        return f"- ⏱️ {_code(one_line(command.command, 300))} → timed out"
    mark = "✅" if command.ok else "❌"
    return f"- {mark} {_code(one_line(command.command, 300))} → exit {command.exit_code}"


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
            f" {_code(one_line(command.command, 300))} {ended}."
        )
    return lines


def _call_line(call: ToolCall) -> str:
    mark = {"ok": "✅", "error": "❌", "running": "⏳"}[call.state]
    line = f"- {mark} {_code(call.summary)}"
    if call.timed_out:
        line += " → timed out"
    elif call.exit_code is not None:
        line += f" → exit {call.exit_code}"
    return line


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
        sections.append(f"**Error:** {_code(one_line(outcome.error or 'unknown error', 1_000))}")
    elif outcome.conclusion is Conclusion.INCOMPLETE:
        stopped = _code(one_line(outcome.error or "a budget ran out", 1_000))
        kind = "pull request" if outcome.draft_refused else "draft pull request"
        if outcome.fork is not None and outcome.fork.proposed:
            kind = "patch below"
        sections.append(
            f"**Stopped before the end:** {stopped}. The {kind} holds the work"
            " so far; the summary says what is left. Mention Neo on it to go on."
        )
    if outcome.draft_refused and outcome.pr_url:
        sections.append(
            "ℹ️ This repository does not allow draft pull requests (GitHub allows them on"
            " public repositories and on paid plans), so this one is a regular pull request:"
            " it is ready for review as soon as it is opened."
        )
    if len(outcome.models) > 1:
        first, *rest = outcome.models
        why = _code(one_line(outcome.fallback_reason or "unavailable", 300))
        sections.append(
            f"ℹ️ {_code(first)} was unavailable ({why}), so the fallback"
            f" {_code(rest[-1])} did the rest of the work."
        )
    sections.extend(f"ℹ️ {note}" for note in outcome.notes)
    if outcome.fork is not None and (pushed := fork_pushed_line(outcome.fork, code=_code)):
        sections.append(f"ℹ️ {pushed}")
    if outcome.blocked_hosts:
        blocked = blocked_lines(outcome.blocked_hosts, config_path=outcome.config_path, code=_code)
        sections.append("\n".join(blocked))
    sections.extend(setup_lines(outcome.setup, code=_code))
    # Beside the summary, which may say the opposite: the model's word is not proof.
    warnings = _failed_checks(checks)
    if warnings:
        sections.append("\n".join(warnings))
    if outcome.summary.strip():
        original = outcome.summary.strip()
        # Never more than twice what the comment holds, before the costlier
        # work: a longer summary is cut again below, with a note.
        summary = _close_fences(neutralise(_head(original, 2 * _BUDGET)))
        total = len(original)
        part = _Part(summary, lambda limit: _cut_summary(summary, limit, total))
        sections.append(part)
    if outcome.fork is not None and outcome.fork.proposed:
        patch, short = patch_section(outcome.fork, config_path=outcome.config_path, code=_code)
        # Whole or not at all: a patch cut short would not apply.
        sections.append(_Part(patch, lambda limit: short))
    if outcome.left_out or outcome.generated:
        lines = [
            f"- Left out: {_code(path.rstrip('/') + '/')} (a git repository of its own)"
            for path in outcome.left_out
        ]
        if outcome.generated:
            lines.append(_generated_line(outcome.generated))
        sections.append(_lines_part(lines, "head", "left-out directories"))
    if state.checklist:
        sections.append("**Checklist**")
        sections.append(_lines_part(_checklist_lines(state.checklist), "head", "more steps"))
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
    sections.append(_footer(outcome, duration))
    return _clamp(_fit(sections, _BUDGET))


def _generated_line(generated: Sequence[tuple[str, int]]) -> str:
    files = sum(count for _, count in generated)
    kinds = ", ".join(_code(kind) for kind, _ in generated)
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
        head = _close_fences(head)
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


# --- when to edit -----------------------------------------------------------------


class Throttle:
    """Edit the comment at most every `interval` seconds, and only when its text changed.

    The final report is not throttled: the worker always writes it. When an
    edit is refused, `delay` says how long to wait for the trailing edit, so
    the last state before a quiet spell is still shown.
    """

    def __init__(self, interval: float = 3.0) -> None:
        self.interval = interval
        self._text: str | None = None
        self._at: float | None = None

    def delay(self, text: str, now: float) -> float | None:
        """None: nothing to edit; 0: edit now; else seconds until an edit may go."""
        if text == self._text:
            return None
        if self._at is None:
            return 0.0
        return max(0.0, self._at + self.interval - now)

    def should_edit(self, text: str, now: float) -> bool:
        return self.delay(text, now) == 0.0

    def edited(self, text: str, now: float) -> None:
        """Record that the comment now holds `text`, written at `now`."""
        self._text = text
        self._at = now
