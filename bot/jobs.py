"""What the intake hands the workers: job requests, and jobs as the queue keeps them.

Values only. `bot.intake.triggers` makes `JobRequest`s from webhook payloads, a
`JobQueue` stores them durably as `Job`s, the worker runs them and records a
`JobOutcome`: what the job achieved, in the one vocabulary of `Conclusion`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from runner.job import JobResult

__all__ = [
    "FINAL_STATES",
    "Conclusion",
    "Job",
    "JobKind",
    "JobOutcome",
    "JobRequest",
    "JobState",
    "Lane",
    "Thread",
    "TriggerKind",
    "conclusion_of",
]

# The queue's two lanes: runs, one at a time per thread, and stops and steers,
# which are claimable while their thread's run goes on.
Lane = Literal["run", "cancel"]


class JobKind(StrEnum):
    """What a job does; each kind is a module of the worker's."""

    # Work pushed to a branch, and a pull request for it.
    TASK = "task"
    # A pull request reviewed: nothing pushed, one review submitted.
    REVIEW = "review"
    # The red checks on a pull request Neo opened, repaired on its branch.
    CI_REPAIR = "repair"
    # `@neo stop`: the thread's work stopped.
    STOP = "stop"
    # `@neo steer ...`: a message for the thread's running run, read at its next turn.
    STEER = "steer"

    @property
    def lane(self) -> Lane:
        # A steer, like a stop, is about the run going on: it cannot wait for it.
        return "cancel" if self in (JobKind.STOP, JobKind.STEER) else "run"


class TriggerKind(StrEnum):
    """What started a job, as triage recorded it.

    A webhook's event and action as GitHub names them, or Neo's own for a
    schedule; the Action records a workflow's event by its name (any
    comment's action is a COMMENT), and one Neo has no use for as OTHER.
    """

    COMMENT = "issue_comment.created"
    ISSUE_OPENED = "issues.opened"
    ISSUE_EDITED = "issues.edited"
    ISSUE_LABELED = "issues.labeled"
    ISSUE_ASSIGNED = "issues.assigned"
    REVIEW_COMMENT = "pull_request_review_comment.created"
    REVIEW = "pull_request_review.submitted"
    PULL_REQUEST_LABELED = "pull_request.labeled"
    REVIEW_REQUESTED = "pull_request.review_requested"
    CHECK_RUN = "check_run.completed"
    CHECK_SUITE = "check_suite.completed"
    WORKFLOW_RUN = "workflow_run.completed"
    # `.github/neo.yml`'s schedules, or a workflow's `schedule` event.
    SCHEDULE = "schedule"
    # A workflow started by hand.
    DISPATCH = "workflow_dispatch"
    OTHER = "other"

    @property
    def is_post(self) -> bool:
        """A comment or review whose text is the request."""
        return self in _POSTS


_POSTS = frozenset({TriggerKind.COMMENT, TriggerKind.REVIEW_COMMENT, TriggerKind.REVIEW})


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


class Conclusion(StrEnum):
    """What a job achieved; its `JobState` is only where the queue has it."""

    SUCCESS = "success"
    NO_CHANGES = "no_changes"
    # A budget (turns, time, cost, the window) stopped the work; what was
    # done is in a draft pull request.
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # The author may not ask Neo for this here; nothing ran.
    UNAUTHORISED = "unauthorised"
    # A stop request did what it asked (it may have found nothing to stop).
    STOPPED = "stopped"

    @property
    def state(self) -> JobState:
        """The queue state a job that concluded so ends in."""
        return _STATE_OF[self]


_STATE_OF = {
    Conclusion.SUCCESS: JobState.SUCCEEDED,
    Conclusion.NO_CHANGES: JobState.SUCCEEDED,
    # Not done: `neo jobs retry` goes on with the same branch and session.
    Conclusion.INCOMPLETE: JobState.FAILED,
    Conclusion.FAILED: JobState.FAILED,
    Conclusion.CANCELLED: JobState.CANCELLED,
    Conclusion.UNAUTHORISED: JobState.FAILED,
    Conclusion.STOPPED: JobState.SUCCEEDED,
}

# The runner's word for how a run ended, when its work was not cut short.
_RUN_CONCLUSIONS = {
    "changed": Conclusion.SUCCESS,
    "no_changes": Conclusion.NO_CHANGES,
    "failed": Conclusion.FAILED,
    "cancelled": Conclusion.CANCELLED,
}


def conclusion_of(result: JobResult) -> Conclusion:
    """The one mapping from the runner's result to what the job achieved."""
    if result.incomplete:
        return Conclusion.INCOMPLETE
    return _RUN_CONCLUSIONS[result.conclusion]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutcome:
    """What the queue keeps of a finished job; `neo jobs` and `neo action` read it."""

    conclusion: Conclusion
    # One line: why it failed, was cancelled or stopped early.
    error: str | None = None
    pr_url: str | None = None
    branch: str | None = None
    session_id: str | None = None
    cost_usd: float | None = None
    # The one review a review job submitted.
    review_url: str | None = None
    # The final report's Markdown, as the progress comment ends.
    report: str | None = None
    # Login of who stopped it.
    cancelled_by: str | None = None
    # A stop request's: the queued runs it cancelled, the running ones it asked to stop.
    cancelled: tuple[int, ...] = ()
    cancel_requested: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The stored form: a stop request's lists and `cancelled_by` only when they apply."""
        data: dict[str, Any] = {
            "conclusion": self.conclusion.value,
            "error": self.error,
            "pr_url": self.pr_url,
            "branch": self.branch,
            "session_id": self.session_id,
            "cost_usd": self.cost_usd,
            "report": self.report,
        }
        if self.review_url:
            data["review_url"] = self.review_url
        if self.cancelled_by:
            data["cancelled_by"] = self.cancelled_by
        if self.conclusion is Conclusion.STOPPED:
            data["cancelled"] = list(self.cancelled)
            data["cancel_requested"] = list(self.cancel_requested)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], state: JobState) -> JobOutcome:
        """An outcome as stored, or as rows written before it existed (loose dicts)."""
        error = _text(data.get("error"))
        return cls(
            conclusion=_stored_conclusion(data, state, error),
            error=error,
            pr_url=_text(data.get("pr_url")),
            branch=_text(data.get("branch")),
            session_id=_text(data.get("session_id")),
            cost_usd=_number(data.get("cost_usd")),
            report=_text(data.get("report")),
            review_url=_text(data.get("review_url")),
            cancelled_by=_text(data.get("cancelled_by")),
            cancelled=_ids(data.get("cancelled")),
            cancel_requested=_ids(data.get("cancel_requested")),
        )


def _stored_conclusion(data: Mapping[str, Any], state: JobState, error: str | None) -> Conclusion:
    if data.get("conclusion") == "failed" and error == "unauthorised":
        return Conclusion.UNAUTHORISED  # how rows said it before the enum had it
    try:
        return Conclusion(str(data.get("conclusion")))
    except ValueError:
        pass
    if "cancelled" in data or "cancel_requested" in data:
        return Conclusion.STOPPED  # a stop request's, written as it applied
    if state is JobState.CANCELLED:
        return Conclusion.CANCELLED
    return Conclusion.SUCCESS if state is JobState.SUCCEEDED else Conclusion.FAILED


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _ids(value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, int) and not isinstance(item, bool))


@dataclass(frozen=True, slots=True)
class Thread:
    """An issue or pull request: jobs of one thread run one at a time, in order."""

    repository: str  # owner/name
    number: int
    is_pull_request: bool = False

    @property
    def key(self) -> str:
        return f"{self.repository.lower()}#{self.number}"


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One piece of work a webhook delivery (or a schedule, or a workflow) asks for."""

    kind: JobKind
    thread: Thread
    installation_id: int | None
    # The event and action that triggered it, e.g. "issue_comment.created", as
    # shown to people; what the code reads is `trigger`.
    event: str
    trigger: TriggerKind
    # The comment, review or issue whose text holds the instruction.
    trigger_id: int
    author: str
    # GitHub's author_association of the trigger (OWNER, MEMBER, NONE, ...).
    author_association: str
    # The instruction text as written: untrusted data, quoted to the model.
    instruction: str
    # One comment never makes two jobs, whichever deliveries carry it.
    dedupe_key: str
    delivery_id: str
    # The branch the job must work on, when the request names one: a
    # schedule's (`bot.intake.schedules`). None: the worker picks it. Rows queued
    # before this field existed read as None.
    branch: str | None = None
    # `instruction` is a workflow file's prompt (`neo action`'s `prompt`
    # input), the task whatever the thread says, and not text the trigger's
    # author wrote. Rows queued before this field existed read as False.
    instruction_from_workflow: bool = False
    # A repair's: the commit whose checks failed. Rows queued before it read None.
    head_sha: str | None = None

    @property
    def lane(self) -> Lane:
        return self.kind.lane

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobRequest:
        fields = dict(data)
        fields["thread"] = Thread(**fields["thread"])
        # Rows queued before the job kinds had a kind (run, cancel) and a mode.
        mode = fields.pop("mode", None) or "task"
        kind = fields["kind"]
        fields["kind"] = (
            JobKind.STOP if kind == "cancel" else JobKind(mode if kind == "run" else kind)
        )
        # Rows queued before the trigger was recorded: their event is its value.
        trigger = fields.get("trigger", fields["event"])
        known = trigger in TriggerKind._value2member_map_
        fields["trigger"] = TriggerKind(trigger) if known else TriggerKind.OTHER
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    request: JobRequest
    state: JobState
    attempts: int
    created_at: float  # unix time
    updated_at: float
    # Set while running: who holds the lease and until when.
    worker: str | None = None
    lease_expires_at: float | None = None
    # Someone asked to stop it (`@neo stop`, `neo jobs cancel`) while it ran.
    cancel_requested: bool = False
    # What the job achieved, once it finished (a stop request's as soon as it applied).
    result: JobOutcome | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["state"] = self.state.value
        data["request"] = self.request.to_json()
        data["result"] = None if self.result is None else self.result.to_json()
        return data


def run_url(public_url: str, job_id: int) -> str | None:
    """A job's run page (`GET /runs/{id}`) under NEO_PUBLIC_URL; None when that is unset."""
    return f"{public_url.rstrip('/')}/runs/{job_id}" if public_url else None
