"""Which deliveries are work for Neo, and what work. Pure triage over parsed deliveries.

`triage` turns a `Delivery` into job requests, or an `Ignore` with its reason; whether
the author may run Neo is the worker's check. The payloads are read through the
models of `payloads.py`, the comments' mentions through `mentions.py`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from pydantic import ValidationError

from bot.config.handle import handle_problem
from bot.github.core import FAILED_CONCLUSIONS
from bot.intake.mentions import (
    asks_review,
    is_steer,
    is_stop,
    mention_count,
    mentions,
    read_mentions,
)
from bot.intake.payloads import (
    IMPLAUSIBLE,
    CheckRunPayload,
    CheckSuitePayload,
    CiCommon,
    Common,
    Issue,
    IssueCommentPayload,
    IssuesAssignedPayload,
    IssuesEditedPayload,
    IssuesLabeledPayload,
    IssuesPayload,
    MinimalPull,
    PullRequestLabeledPayload,
    PullRequestReviewRequestedPayload,
    ReviewCommentPayload,
    ReviewPayload,
    User,
    WorkflowRunPayload,
)
from bot.intake.webhooks import Delivery
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind

__all__ = ["ACTED_ON", "Ignore", "Reason", "Rules", "triage", "who_blocks"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """What makes Neo act: its handle, its label, who it is, which bots it trusts."""

    app_bot_login: str  # the App's own bot user, e.g. "neo[bot]"
    handle: str = "@neo"
    trigger_label: str = "neo"
    # The label that asks for a review of a pull request.
    review_label: str = "neo-review"
    # Bot logins allowed to trigger runs; never the App itself.
    allowed_bots: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        problem = handle_problem(self.handle)
        if problem is not None:
            raise ValueError(f"handle {problem}")
        if not self.app_bot_login:
            raise ValueError("app_bot_login must be the App's bot login, e.g. neo[bot]")
        if not self.trigger_label.strip():
            raise ValueError("trigger_label must not be empty")
        if not self.review_label.strip():
            raise ValueError("review_label must not be empty")


# What GitHub itself says of an author with no association, or none given.
NO_ASSOCIATION = "NONE"


class Reason(StrEnum):
    """Why a delivery makes no job; a small fixed set, fit for metric labels."""

    NOT_ACTED_ON = "not an event neo acts on"
    MALFORMED = "malformed payload"
    # Well-formed, but with a value GitHub never sends (see _plausible).
    IMPLAUSIBLE = "implausible payload"
    SELF = "neo's own activity"
    BOT = "bot sender"
    LOCKED = "locked"
    NO_MENTION = "no mention"
    NO_NEW_MENTION = "edit adds no new mention"
    OTHER_LABEL = "another label"
    OTHER_ASSIGNEE = "assigned to someone else"
    # CI completions: green or inconclusive, or on no pull request of this repository.
    NOT_RED = "check did not fail"
    NO_PULL_REQUEST = "no pull request of this repository"


@dataclass(frozen=True, slots=True)
class Ignore:
    reason: str


def _body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _event_key(
    kind: str, thread_id: int, what: str, updated_at: str | None, delivery: Delivery
) -> str:
    """The dedupe key of a label, an assignment or a review request: the event's own.

    GitHub signs a delivery's body, not its delivery id: one signed body sent
    again under fresh ids is one event, and must make one job. Its identity is
    the thread, what was added (the label, the assignee, the reviewer) and
    when: the thread's `updated_at`, which every such change moves, so the
    label added again after it was removed is a new event. A payload without
    it (none GitHub sends) is named by its whole content.
    """
    when = updated_at or _body_hash(json.dumps(delivery.payload, sort_keys=True))
    return f"{kind}:{thread_id}:{what.lower()}:{when}"


def _is_bot(user: User) -> bool:
    return user.type == "Bot" or user.login.lower().endswith("[bot]")


def who_blocks(people: list[User | None], rules: Rules) -> Reason | None:
    """The App itself always blocks; other bots unless allow-listed."""
    allowed = {login.lower() for login in rules.allowed_bots}
    users = [user for user in people if user is not None]  # None: a deleted account
    for user in users:
        if user.login.lower() == rules.app_bot_login.lower():
            return Reason.SELF
    for user in users:
        if _is_bot(user) and user.login.lower() not in allowed:
            return Reason.BOT
    return None


def _issue_text(issue: Issue) -> str:
    return f"{issue.title}\n\n{issue.body or ''}".rstrip()


@dataclass(frozen=True, slots=True)
class _Trigger:
    """What every request needs, gathered from one payload shape."""

    common: Common
    thread: Thread
    locked: bool
    trigger_id: int
    author_association: str
    instruction: str
    dedupe_key: str
    kind: JobKind = JobKind.TASK


def _request(delivery: Delivery, trigger: _Trigger) -> list[JobRequest]:
    installation = trigger.common.installation
    return [
        JobRequest(
            kind=trigger.kind,
            # Every event and action triage acts on is a trigger kind of its name.
            trigger=TriggerKind(delivery.event_action),
            thread=trigger.thread,
            installation_id=installation.id if installation is not None else None,
            event=delivery.event_action,
            trigger_id=trigger.trigger_id,
            # Who caused the event: the one whose write access the worker checks.
            author=trigger.common.sender.login,
            # The association of the text's author: for a label or an assignment
            # by a maintainer, the issue author's (possibly an outsider's).
            author_association=trigger.author_association,
            instruction=trigger.instruction,
            dedupe_key=trigger.dedupe_key,
            delivery_id=delivery.delivery_id,
        )
    ]


def _gate(trigger: _Trigger, users: list[User | None], rules: Rules) -> Ignore | None:
    blocked = who_blocks(users, rules)
    if blocked is not None:
        return Ignore(blocked)
    if trigger.locked:
        return Ignore(Reason.LOCKED)
    return None


def _mentioned(
    delivery: Delivery, trigger: _Trigger, users: list[User | None], rules: Rules, text: str
) -> list[JobRequest] | Ignore:
    """A request if `text` mentions the handle; a cancel if it says only `@neo stop`; a
    steer if it is a post that starts with `@neo steer`."""
    gated = _gate(trigger, users, rules)
    if gated is not None:
        return gated
    reading = read_mentions(text, rules.handle)
    if not mention_count(reading, rules.handle):
        return Ignore(Reason.NO_MENTION)
    if is_stop(reading, rules.handle):
        trigger = replace(trigger, kind=JobKind.STOP)
    elif TriggerKind(delivery.event_action).is_post and is_steer(text, reading, rules.handle):
        trigger = replace(trigger, kind=JobKind.STEER)
    elif trigger.thread.is_pull_request and asks_review(reading, rules.handle):
        trigger = replace(trigger, kind=JobKind.REVIEW)
    return _request(delivery, trigger)


def _issue_thread(common: Common, issue: Issue) -> Thread:
    return Thread(
        repository=common.repository.full_name,
        number=issue.number,
        is_pull_request=issue.pull_request is not None,
    )


def _issue_comment_created(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = IssueCommentPayload.model_validate(delivery.payload)
    body = p.comment.body or ""
    trigger = _Trigger(
        common=p,
        thread=_issue_thread(p, p.issue),
        locked=bool(p.issue.locked),
        trigger_id=p.comment.id,
        author_association=p.comment.author_association or NO_ASSOCIATION,
        instruction=body,
        dedupe_key=f"issue_comment:{p.comment.id}",
    )
    return _mentioned(delivery, trigger, [p.sender, p.comment.user], rules, body)


def _issue_trigger(p: IssuesPayload, dedupe_key: str) -> _Trigger:
    return _Trigger(
        common=p,
        thread=_issue_thread(p, p.issue),
        locked=bool(p.issue.locked),
        trigger_id=p.issue.id,
        author_association=p.issue.author_association or NO_ASSOCIATION,
        instruction=_issue_text(p.issue),
        dedupe_key=dedupe_key,
    )


def _issues_opened(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = IssuesPayload.model_validate(delivery.payload)
    trigger = _issue_trigger(p, f"issues.opened:{p.issue.id}")
    return _mentioned(delivery, trigger, [p.sender], rules, p.issue.body or "")


def _issues_edited(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = IssuesEditedPayload.model_validate(delivery.payload)
    body = p.issue.body or ""
    trigger = _issue_trigger(p, f"issues.edited:{p.issue.id}:{_body_hash(body)}")
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    # No `changes.body`: the title or something else changed, not the body.
    if p.changes is None or p.changes.body is None:
        return Ignore(Reason.NO_NEW_MENTION)
    before = mentions(p.changes.body.from_ or "", rules.handle)
    if mentions(body, rules.handle) <= before:
        return Ignore(Reason.NO_NEW_MENTION)
    return _mentioned(delivery, trigger, [p.sender], rules, body)


def _issues_labeled(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = IssuesLabeledPayload.model_validate(delivery.payload)
    label = p.label.name if p.label is not None else ""
    trigger = _issue_trigger(
        p, _event_key("labeled", p.issue.id, label, p.issue.updated_at, delivery)
    )
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    # Label names are case-insensitive on GitHub.
    if p.label is None or p.label.name.lower() != rules.trigger_label.lower():
        return Ignore(Reason.OTHER_LABEL)
    return _request(delivery, trigger)


def _issues_assigned(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = IssuesAssignedPayload.model_validate(delivery.payload)
    assignee = p.assignee.login if p.assignee is not None else ""
    key = _event_key("assigned", p.issue.id, assignee, p.issue.updated_at, delivery)
    trigger = _issue_trigger(p, key)
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    if p.assignee is None or p.assignee.login.lower() != rules.app_bot_login.lower():
        return Ignore(Reason.OTHER_ASSIGNEE)
    return _request(delivery, trigger)


def _pr_thread(p: ReviewCommentPayload | ReviewPayload) -> Thread:
    return Thread(
        repository=p.repository.full_name,
        number=p.pull_request.number,
        is_pull_request=True,
    )


def _review_comment_created(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = ReviewCommentPayload.model_validate(delivery.payload)
    body = p.comment.body or ""
    trigger = _Trigger(
        common=p,
        thread=_pr_thread(p),
        locked=bool(p.pull_request.locked),
        trigger_id=p.comment.id,
        author_association=p.comment.author_association or NO_ASSOCIATION,
        instruction=body,
        dedupe_key=f"review_comment:{p.comment.id}",
    )
    return _mentioned(delivery, trigger, [p.sender, p.comment.user], rules, body)


def _review_submitted(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = ReviewPayload.model_validate(delivery.payload)
    body = p.review.body or ""
    trigger = _Trigger(
        common=p,
        thread=_pr_thread(p),
        locked=bool(p.pull_request.locked),
        trigger_id=p.review.id,
        author_association=p.review.author_association or NO_ASSOCIATION,
        instruction=body,
        dedupe_key=f"review:{p.review.id}",
    )
    users = [p.sender, p.review.user]
    if _changes_asked_of_app(p, rules) and not mentions(body, rules.handle):
        # Asking the App's own pull request for changes asks the App: no mention needed.
        gated = _gate(trigger, users, rules)
        return gated if gated is not None else _request(delivery, trigger)
    return _mentioned(delivery, trigger, users, rules, body)


def _changes_asked_of_app(p: ReviewPayload, rules: Rules) -> bool:
    """Whether the review requests changes on a pull request the App opened."""
    author = p.pull_request.user
    own = author is not None and author.login.lower() == rules.app_bot_login.lower()
    return own and (p.review.state or "").lower() == "changes_requested"


def _pull_request_trigger(
    p: PullRequestLabeledPayload | PullRequestReviewRequestedPayload, dedupe_key: str
) -> _Trigger:
    pull = p.pull_request
    return _Trigger(
        common=p,
        thread=Thread(repository=p.repository.full_name, number=pull.number, is_pull_request=True),
        locked=bool(pull.locked),
        trigger_id=pull.id,
        author_association=pull.author_association or NO_ASSOCIATION,
        instruction=f"{pull.title}\n\n{pull.body or ''}".rstrip(),
        dedupe_key=dedupe_key,
        kind=JobKind.REVIEW,
    )


def _pull_request_labeled(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = PullRequestLabeledPayload.model_validate(delivery.payload)
    pull, label = p.pull_request, p.label.name if p.label is not None else ""
    key = _event_key("review-label", pull.id, label, pull.updated_at, delivery)
    trigger = _pull_request_trigger(p, key)
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    if p.label is None or p.label.name.lower() != rules.review_label.lower():
        return Ignore(Reason.OTHER_LABEL)
    return _request(delivery, trigger)


def _review_requested(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = PullRequestReviewRequestedPayload.model_validate(delivery.payload)
    pull, asked = p.pull_request, p.requested_reviewer
    reviewer = asked.login if asked is not None else ""
    key = _event_key("review-requested", pull.id, reviewer, pull.updated_at, delivery)
    trigger = _pull_request_trigger(p, key)
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    if asked is None or asked.login.lower() != rules.app_bot_login.lower():
        return Ignore(Reason.OTHER_ASSIGNEE)
    return _request(delivery, trigger)


# --- CI completions: a red check on a pull request's branch ------------------------

# The conclusions that say the code is wrong; cancelled, neutral, skipped,
# stale and action_required say nothing about it.


@dataclass(frozen=True, slots=True)
class _CiEnded:
    """What a check run, a check suite or a workflow run says of the commit it ran on."""

    trigger_id: int  # the run's or suite's id
    what: str  # "the check run \"test\"", in Neo's words
    conclusion: str | None
    head_branch: str | None
    head_sha: str
    pulls: Sequence[MinimalPull]


def _ci_request(delivery: Delivery, p: CiCommon, ended: _CiEnded) -> list[JobRequest] | Ignore:
    """A repair of the pull request whose branch went red; whose push it was, the
    worker decides (it reads GitHub). The senders here are bots: not gated."""
    if ended.conclusion not in FAILED_CONCLUSIONS:
        return Ignore(Reason.NOT_RED)
    head_branch, head_sha = ended.head_branch, ended.head_sha
    # Same repository and the same branch: a fork's pull request is never Neo's to push.
    pull = next(
        (
            pr
            for pr in ended.pulls
            if head_branch is not None
            and pr.head.ref == head_branch
            and pr.head.repo.id == p.repository.id
        ),
        None,
    )
    if pull is None:
        return Ignore(Reason.NO_PULL_REQUEST)
    repository = p.repository.full_name
    installation = p.installation
    return [
        JobRequest(
            kind=JobKind.CI_REPAIR,
            thread=Thread(repository=repository, number=pull.number, is_pull_request=True),
            installation_id=installation.id if installation is not None else None,
            event=delivery.event_action,
            trigger_id=ended.trigger_id,
            author=p.sender.login,
            author_association=NO_ASSOCIATION,
            # Neutral words of Neo's own: only the check's name comes from the payload.
            instruction=f"CI failed on {head_sha}: {ended.what} ended {ended.conclusion}.",
            # Every delivery about one red commit (its suite, its runs, its
            # workflows) makes one job.
            dedupe_key=f"ci-repair:{repository.lower()}:{head_sha}",
            delivery_id=delivery.delivery_id,
            trigger=TriggerKind(delivery.event_action),
            head_sha=head_sha,
        )
    ]


def _named(name: str) -> str:
    return '"' + " ".join(name.split())[:100].replace('"', "'") + '"'


def _check_run_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = CheckRunPayload.model_validate(delivery.payload)
    run = p.check_run
    return _ci_request(
        delivery,
        p,
        _CiEnded(
            trigger_id=run.id,
            what=f"the check run {_named(run.name)}",
            conclusion=run.conclusion,
            head_branch=run.check_suite.head_branch if run.check_suite else None,
            head_sha=run.head_sha,
            pulls=run.pull_requests,
        ),
    )


def _check_suite_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = CheckSuitePayload.model_validate(delivery.payload)
    suite = p.check_suite
    app = f" of {_named(suite.app.name)}" if suite.app else ""
    return _ci_request(
        delivery,
        p,
        _CiEnded(
            trigger_id=suite.id,
            what=f"the check suite{app}",
            conclusion=suite.conclusion,
            head_branch=suite.head_branch,
            head_sha=suite.head_sha,
            pulls=suite.pull_requests,
        ),
    )


def _workflow_run_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = WorkflowRunPayload.model_validate(delivery.payload)
    run = p.workflow_run
    return _ci_request(
        delivery,
        p,
        _CiEnded(
            trigger_id=run.id,
            what=f"the workflow run {_named(run.name or 'unnamed')}",
            conclusion=run.conclusion,
            head_branch=run.head_branch,
            head_sha=run.head_sha,
            pulls=run.pull_requests,
        ),
    )


_Handler = Callable[[Delivery, Rules], list[JobRequest] | Ignore]

_HANDLERS: dict[tuple[str, str], _Handler] = {
    ("issue_comment", "created"): _issue_comment_created,
    ("issues", "opened"): _issues_opened,
    ("issues", "edited"): _issues_edited,
    ("issues", "labeled"): _issues_labeled,
    ("issues", "assigned"): _issues_assigned,
    ("pull_request_review_comment", "created"): _review_comment_created,
    ("pull_request_review", "submitted"): _review_submitted,
    ("pull_request", "labeled"): _pull_request_labeled,
    ("pull_request", "review_requested"): _review_requested,
    ("check_run", "completed"): _check_run_completed,
    ("check_suite", "completed"): _check_suite_completed,
    ("workflow_run", "completed"): _workflow_run_completed,
}

# `event.action` pairs that can make a job; everything else is ignored unread.
ACTED_ON = frozenset(f"{event}.{action}" for event, action in _HANDLERS)


def triage(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    """The job requests `delivery` asks for, or why it asks for none. Never raises."""
    if delivery.action is None:
        return Ignore(Reason.NOT_ACTED_ON)
    handler = _HANDLERS.get((delivery.event, delivery.action))
    if handler is None:
        return Ignore(Reason.NOT_ACTED_ON)
    try:
        return handler(delivery, rules)
    except ValidationError as error:
        # Implausible only when nothing else is wrong: a wrong shape is malformed.
        if all(e["type"] == IMPLAUSIBLE for e in error.errors(include_url=False)):
            return Ignore(Reason.IMPLAUSIBLE)
        return Ignore(Reason.MALFORMED)
