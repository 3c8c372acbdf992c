"""A job's progress while it runs, and how it ended: the state its comment shows. Pure.

`Progress` folds the agent's events into a `ProgressState`, `Outcome` is how the
job ended, `Throttle` says when an edit of the comment is worth a call; the
Markdown is `bot.worker.rendering`'s, and the worker owns the clock and the
GitHub calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from bot.github.markers import job_id_of, job_marker
from bot.jobs import Conclusion
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
from runner.llm.types import Usage
from runner.mcp.report import McpReport, McpSkipped, Skipped
from runner.network import Blocked
from runner.sandbox.setup_plan import SetupOutcome
from runner.skills import SkillsInvoked
from runner.subagent import ChildFinished, ChildStarted, ChildTurn
from runner.text import one_line
from runner.tools.checklist import SPEC as CHECKLIST_SPEC
from runner.tools.checklist import ChecklistChanged, ChecklistItem

__all__ = [
    "FINAL",
    "INTERNAL_TOOLS",
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
    "compacted",
    "describe_call",
    "job_id_of",
    "job_marker",
]

# --- one-liners -----------------------------------------------------------------


_SUBJECT = {
    "bash": "command",
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "grep": "pattern",
    "glob": "pattern",
    "agent": "description",
}


# Tools of Neo's own bookkeeping, not work on the repository: the checklist
# (shown to the model as `workflow`, which reads as GitHub Actions in a list of
# calls) is shown as the checklist, never as a call.
INTERNAL_TOOLS = frozenset({CHECKLIST_SPEC.name})


def describe_call(name: str, args: Mapping[str, object]) -> str:
    """A tool call as one line: `bash: pytest -q`, `edit_file: src/app.py`."""
    subject: object = None
    if name in _SUBJECT:
        subject = args.get(_SUBJECT[name])
        where = args.get("path")
        if name in ("grep", "glob") and isinstance(where, str) and where not in ("", "."):
            subject = f"{subject} in {where}"
    else:
        subject = next((value for value in args.values() if isinstance(value, str)), None)
    if not isinstance(subject, str) or not subject.strip():
        return one_line(name, 120)
    return one_line(f"{name}: {subject}", 120)


def compacted(before: int, after: int) -> str:
    """The step that says the conversation was compacted."""
    return f"compacted the conversation ({before:,} → {after:,} tokens)"


# --- state ----------------------------------------------------------------------


class Status(StrEnum):
    QUEUED = "queued"
    STARTING = "starting"
    WORKING = "working"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


# The statuses of a job that has ended.
FINAL = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})


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
    # The MCP servers the job goes without, and why.
    mcp_skipped: tuple[Skipped, ...] = ()
    # The job's run page (NEO_PUBLIC_URL/runs/<id>), when it has one.
    run_url: str | None = None

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

    def __init__(
        self, job_id: int | str, *, clock: Callable[[], float], run_url: str | None = None
    ) -> None:
        job_marker(job_id)  # refuses an id the marker cannot carry
        self._job_id = str(job_id)
        self._run_url = run_url
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
        self._mcp_skipped: tuple[Skipped, ...] = ()
        self._children: dict[int, RunningChild] = {}
        self._internal: set[str] = set()

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
            mcp_skipped=self._mcp_skipped,
            run_url=self._run_url,
        )

    def start(self) -> None:
        """The worker took the job and prepares its workspace."""
        if self._status in (Status.QUEUED, Status.STARTING):
            self._status = Status.STARTING
            self._started_at = self._clock()

    def note(self, text: str) -> None:
        """Show what the worker itself is doing, e.g. "pushing the branch"."""
        if self._status not in FINAL:
            self._step = Step(text)

    def finish(self, conclusion: Conclusion) -> None:
        """The job ended; later events change nothing."""
        if self._status in FINAL:
            return
        self._status = _STATUS_OF[conclusion]
        self._ended_at = self._clock()
        self._step = None

    def apply(self, event: Event) -> None:
        if self._status in FINAL:
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
            self._step = Step(compacted(event.tokens_before, event.tokens_after))
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
        elif isinstance(payload, McpSkipped):
            self._mcp_skipped = payload.skipped

    def _current(self) -> Step:
        """The latest call still running, else thinking."""
        return next(reversed(self._running.values()), THINKING)

    def _started(self, event: ToolStarted) -> None:
        if event.name in INTERNAL_TOOLS:
            self._internal.add(event.call_id)
            return
        summary = describe_call(event.name, event.args)
        self._index[event.call_id] = len(self._calls)
        self._calls.append(ToolCall(event.call_id, event.name, summary))
        command = event.args.get("command")
        if event.name == "bash" and isinstance(command, str):
            self._bash[event.call_id] = command
        self._running[event.call_id] = Step(summary, is_call=True)
        self._step = self._running[event.call_id]

    def _finished(self, event: ToolFinished) -> None:
        if event.call_id in self._internal or event.name in INTERNAL_TOOLS:
            self._internal.discard(event.call_id)
            self._step = self._current()
            return
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
    # What the agent said it lacked: a tool, a permission, a host, a secret.
    needed: tuple[str, ...] = ()
    # Hosts the egress proxy refused, with the commands that tried; where the config is.
    blocked_hosts: tuple[Blocked, ...] = ()
    config_path: str = ".github/neo.yml"
    # A fork's pull request: the change proposed as a patch, or what the push left out.
    fork: ForkResult | None = None
    # What the setup phase did, a command that failed the job included (None: no setup).
    setup: SetupOutcome | None = None
    # The run changed the code (a pull request, a pushed branch, a proposed
    # patch): only then does the report say what was verified.
    changed: bool = False
    # The MCP tools called and the servers left out.
    mcp: McpReport = field(default_factory=McpReport)


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
