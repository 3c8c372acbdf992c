"""What the intake hands the workers: job requests, and jobs as the queue keeps them.

Values only. `bot.intake.triggers` makes `JobRequest`s from webhook payloads, a
`JobQueue` stores them durably as `Job`s, the worker (a later issue) runs
them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal

RequestKind = Literal["run", "cancel"]


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


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
    """One piece of work a webhook delivery asks for."""

    kind: RequestKind
    thread: Thread
    installation_id: int | None
    # The event and action that triggered it, e.g. "issue_comment.created".
    event: str
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobRequest:
        fields = dict(data)
        fields["thread"] = Thread(**fields["thread"])
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
    # What the worker reported when it finished (summary, error line, PR URL).
    result: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["state"] = self.state.value
        data["request"] = self.request.to_json()
        return data
