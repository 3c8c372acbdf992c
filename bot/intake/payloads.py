"""The payload fields triage reads, as small strict models: what GitHub sends, or nothing.

Strict (an id is an int, not "123" nor true), frozen, extra fields ignored;
a value GitHub never sends (a login, a repository name, a number of its
shape) fails as `IMPLAUSIBLE`. Why they are small and strict:
docs/architecture.md, "Intake".
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

__all__ = [
    "IMPLAUSIBLE",
    "App",
    "BodyChange",
    "Changes",
    "CheckRun",
    "CheckRunPayload",
    "CheckSuite",
    "CheckSuitePayload",
    "CheckSuiteRef",
    "CiCommon",
    "Comment",
    "Common",
    "HeadRepository",
    "Installation",
    "Issue",
    "IssueCommentPayload",
    "IssuesAssignedPayload",
    "IssuesEditedPayload",
    "IssuesLabeledPayload",
    "IssuesPayload",
    "Label",
    "MinimalPull",
    "PullHeadRef",
    "PullRequest",
    "PullRequestFull",
    "PullRequestLabeledPayload",
    "PullRequestReviewRequestedPayload",
    "Repository",
    "RepositoryWithId",
    "Review",
    "ReviewCommentPayload",
    "ReviewPayload",
    "User",
    "WorkflowRun",
    "WorkflowRunPayload",
]


IMPLAUSIBLE = "implausible"  # the pydantic error type of every check below
# Logins as GitHub has them, not only as it lets them be made today: accounts
# from before ~2013 begin or end with hyphens or repeat them (`-ACE-`, `0----0`),
# and Enterprise Managed Users have an underscore (`mona_octo`). Apps' bot
# users end in `[bot]`. None of these characters is special to git, a path,
# a log line or a commit trailer.
_LOGIN = re.compile(r"[A-Za-z0-9_-]{1,39}(?:\[bot\])?")
_OWNER = re.compile(r"[A-Za-z0-9_-]{1,39}")
_REPOSITORY_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
# OWNER, FIRST_TIME_CONTRIBUTOR, ...; User, Bot, Organization, ...
_WORD = re.compile(r"[A-Za-z_]{1,64}")


def _plausible(what: str, shape: re.Pattern[str]) -> AfterValidator:
    def check(value: str) -> str:
        if shape.fullmatch(value) is None:
            raise PydanticCustomError(IMPLAUSIBLE, "not a {what} GitHub sends", {"what": what})
        return value

    return AfterValidator(check)


def _full_name(value: str) -> str:
    owner, slash, name = value.partition("/")
    if (
        not slash
        or _OWNER.fullmatch(owner) is None
        or _REPOSITORY_NAME.fullmatch(name) is None
        or name in (".", "..")
    ):
        raise PydanticCustomError(IMPLAUSIBLE, "not a repository full_name GitHub sends")
    return value


def _positive(value: int) -> int:
    # GitHub numbers issues and ids from 1; the worker takes 0 for "no thread".
    if value < 1:
        raise PydanticCustomError(IMPLAUSIBLE, "not a number GitHub sends")
    return value


_Login = Annotated[str, _plausible("login", _LOGIN)]
_Word = Annotated[str, _plausible("word", _WORD)]
_FullName = Annotated[str, AfterValidator(_full_name)]
_Number = Annotated[int, AfterValidator(_positive)]
# A commit id: SHA-1, or SHA-256 for repositories that use it.
_Sha = Annotated[str, _plausible("commit sha", re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}"))]
# An ISO 8601 time as GitHub writes one (`2019-05-15T15:20:18Z`; Enterprise
# Server may give an offset or fractions): part of a dedupe key.
_Timestamp = Annotated[
    str,
    _plausible(
        "timestamp",
        re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})"),
    ),
]


class _Model(BaseModel):
    # strict: an id is an int, not "123" nor true; extra fields are ignored.
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class User(_Model):
    login: _Login
    type: _Word | None = None


class Repository(_Model):
    full_name: _FullName


class Installation(_Model):
    id: _Number


class Common(_Model):
    sender: User
    repository: Repository
    installation: Installation | None = None


class Issue(_Model):
    id: _Number
    number: _Number
    title: str
    body: str | None = None
    # GitHub marks these optional or nullable: no user for a deleted account
    # (GitHub shows "ghost"), and older deliveries lack `locked`.
    user: User | None = None
    author_association: _Word | None = None
    locked: bool | None = None
    # Present (an object) when the issue is a pull request.
    pull_request: dict[str, Any] | None = None
    # Moved by every label, assignment and edit: the time of the event a
    # delivery tells, which a replay of it under another delivery id keeps.
    updated_at: _Timestamp | None = None


class PullRequest(_Model):
    number: _Number
    locked: bool | None = None
    # Its author: a pull request the App opened gets answered without a mention.
    user: User | None = None


class PullRequestFull(_Model):
    id: _Number
    number: _Number
    title: str
    body: str | None = None
    user: User | None = None
    author_association: _Word | None = None
    locked: bool | None = None
    # As an issue's: the time of the label or review request a delivery tells.
    updated_at: _Timestamp | None = None


class Comment(_Model):
    id: _Number
    body: str | None = None
    user: User | None = None
    author_association: _Word | None = None


class IssueCommentPayload(Common):
    issue: Issue
    comment: Comment


class IssuesPayload(Common):
    issue: Issue


class BodyChange(_Model):
    from_: str | None = Field(default=None, alias="from")


class Changes(_Model):
    body: BodyChange | None = None


class IssuesEditedPayload(IssuesPayload):
    changes: Changes | None = None


class Label(_Model):
    name: str


class IssuesLabeledPayload(IssuesPayload):
    label: Label | None = None


class IssuesAssignedPayload(IssuesPayload):
    assignee: User | None = None


class ReviewCommentPayload(Common):
    pull_request: PullRequest
    comment: Comment


class PullRequestLabeledPayload(Common):
    pull_request: PullRequestFull
    label: Label | None = None


class PullRequestReviewRequestedPayload(Common):
    pull_request: PullRequestFull
    # Absent when a team was asked.
    requested_reviewer: User | None = None


class Review(Comment):
    # "approved", "changes_requested", "commented", ...; GitHub's case varies.
    state: str | None = None


class ReviewPayload(Common):
    pull_request: PullRequest
    review: Review


class HeadRepository(_Model):
    id: _Number


class PullHeadRef(_Model):
    ref: str
    repo: HeadRepository


class MinimalPull(_Model):
    number: _Number
    head: PullHeadRef


class RepositoryWithId(Repository):
    id: _Number


class CiCommon(_Model):
    """What every CI completion carries: who, where, which installation."""

    sender: User
    repository: RepositoryWithId
    installation: Installation | None = None


class CheckSuiteRef(_Model):
    head_branch: str | None = None


class CheckRun(_Model):
    id: _Number
    name: str
    head_sha: _Sha
    conclusion: str | None = None
    check_suite: CheckSuiteRef | None = None
    pull_requests: list[MinimalPull] = []


class CheckRunPayload(CiCommon):
    check_run: CheckRun


class App(_Model):
    name: str


class CheckSuite(_Model):
    id: _Number
    head_branch: str | None = None
    head_sha: _Sha
    conclusion: str | None = None
    app: App | None = None
    pull_requests: list[MinimalPull] = []


class CheckSuitePayload(CiCommon):
    check_suite: CheckSuite


class WorkflowRun(_Model):
    id: _Number
    name: str | None = None
    head_branch: str | None = None
    head_sha: _Sha
    conclusion: str | None = None
    pull_requests: list[MinimalPull] = []


class WorkflowRunPayload(CiCommon):
    workflow_run: WorkflowRun
