"""Which deliveries are work for Neo, and what work. Pure triage over parsed deliveries.

`triage` turns a `Delivery` into job requests, or an `Ignore` with its reason; whether
the author may run Neo is the worker's check. Why the payload models are small and
strict: docs/architecture.md, "Intake".
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from html.parser import HTMLParser
from typing import Annotated, Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from bot.config.handle import handle_problem
from bot.intake.webhooks import Delivery
from bot.jobs import JobMode, JobRequest, RequestKind, Thread

__all__ = ["ACTED_ON", "Ignore", "Reason", "Rules", "mentions", "triage", "visible_text"]


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


# --- mentions ---------------------------------------------------------------

# GitHub renders comments as CommonMark (cmark-gfm): what is code, a quote or
# a comment there is decided by the parser's rules (indentation, lazy quote
# continuation, fences in list items), which line-based guesses keep missing.
# Built once: triage runs on the request path. Inline parsing, a third of the
# cost, is done here per block, and only for the blocks that name the handle
# when counting mentions. text_join is off so that an escaped `\@` stays a
# token of its own.
_MARKDOWN = MarkdownIt("commonmark").disable(["inline", "text_join"])
# Raw HTML GitHub shows as code, or not at all.
_HIDING_ELEMENTS = frozenset({"code", "pre"})
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
# HTML comments are invisible on GitHub; issue templates put instructions in
# them. An unclosed one hides the rest of its HTML block, which CommonMark
# runs to the end of the text.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def visible_text(markdown: str) -> str:
    """`markdown` without what cannot hold a mention: code, quotes, HTML comments.

    Removed parts become blank, so words on either side never join; each
    line of what is kept stays on its own line.
    """
    return _read(markdown, None).text


@dataclass(frozen=True, slots=True)
class _Reading:
    """The visible text of the blocks read; the others are left blank, unread."""

    text: str
    unread: list[Callable[[], str]]


def _read(markdown: str, naming: str | None) -> _Reading:
    """Read every block of `markdown`, or with `naming` only those that contain it."""
    env: dict[str, Any] = {}  # link reference definitions, for inline parsing
    lines: list[str] = []
    unread: list[Callable[[], str]] = []
    quotes = 0
    for token in _MARKDOWN.parse(markdown, env):
        if token.type == "blockquote_open":
            quotes += 1
        elif token.type == "blockquote_close":
            quotes -= 1
        elif quotes or token.map is None or token.type not in ("inline", "html_block"):
            continue  # quoted; or structure; or code_block and fence, which hold code
        else:
            text = functools.partial(_block_text, token, env)
            if naming is None or naming in token.content.lower():
                _place(lines, token.map, text())
            else:
                unread.append(text)
    return _Reading("\n".join(lines), unread)


def _block_text(token: Token, env: dict[str, Any]) -> str:
    if token.type == "html_block":
        return _html_text(token.content)
    children: list[Token] = []
    _MARKDOWN.inline.parse(token.content, _MARKDOWN, env, children)
    return _inline_text(children)


def _place(lines: list[str], where: list[int], text: str) -> None:
    """Put `text` on the source lines `where` = [first, past the last] it came from."""
    first, end = where
    if len(lines) < end:
        lines.extend([""] * (end - len(lines)))
    parts = text.split("\n")
    room = max(end - first, 1)
    if len(parts) > room:  # a code span over several lines: fewer breaks came out
        parts = [*parts[: room - 1], " ".join(parts[room - 1 :])]
    for offset, part in enumerate(parts):
        line = first + offset
        lines[line] = f"{lines[line]} {part}" if lines[line] else part


def _inline_text(children: list[Token]) -> str:
    out: list[str] = []
    hiding = 0  # depth of open <code> or <pre> elements
    for child in children:
        kind = child.type
        if kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "html_inline":
            tag = _TAG_NAME.match(child.content)
            if tag and tag[2].lower() in _HIDING_ELEMENTS and not child.content.endswith("/>"):
                hiding = max(hiding - 1, 0) if tag[1] else hiding + 1
            out.append(" ")
        elif hiding:
            continue
        elif kind == "text":
            out.append(child.content)
        elif kind == "text_special":
            # `\@neo` shows "@neo" but says "not a mention".
            out.append(" " if child.info == "escape" and child.content == "@" else child.content)
        elif kind in ("code_inline", "image"):  # code; an image's alt text is not shown
            out.append(" ")
        # Emphasis and link markers: the text between them is its own token.
    return "".join(out)


class _HtmlText(HTMLParser):
    """The text a raw HTML block shows, but not inside <code> or <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.kept: list[str] = []
        self._hiding = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hiding += tag in _HIDING_ELEMENTS
        self.kept.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDING_ELEMENTS and self._hiding:
            self._hiding -= 1
        self.kept.append(" ")

    def handle_data(self, data: str) -> None:
        self.kept.append("\n" * data.count("\n") if self._hiding else data)


def _html_text(html: str) -> str:
    # Comments go first, newlines kept: HTMLParser reads an unclosed one as text.
    html = _HTML_COMMENT.sub(lambda m: " " + "\n" * m[0].count("\n"), html)
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    return "".join(parser.kept)


@functools.lru_cache(maxsize=8)
def _mention_pattern(handle: str) -> re.Pattern[str]:
    # A whole word: not part of an email, a URL, a longer login (@neo-bot,
    # @neo_x, @neonate), a team (@neo/team) or a domain (@neo.com).
    return re.compile(
        r"(?<![\w@./+-])" + re.escape(handle) + r"(?![\w/@-]|\.\w)",
        re.IGNORECASE,
    )


@functools.lru_cache(maxsize=8)
def _stop_pattern(handle: str) -> re.Pattern[str]:
    mention = _mention_pattern(handle).pattern
    return re.compile(r"[^\w@]*" + mention + r"[^\w]+stop[^\w]*", re.IGNORECASE)


def _read_mentions(markdown: str, handle: str) -> _Reading:
    """The blocks of `markdown` that name `handle`. Most text names it nowhere,
    and this test costs far less than parsing."""
    named = handle.lower()
    return _read(markdown, named) if named in markdown.lower() else _Reading("", [])


def _count(reading: _Reading, handle: str) -> int:
    return len(_mention_pattern(handle).findall(reading.text))


def mentions(markdown: str, handle: str) -> int:
    """How many times `markdown` mentions `handle` where GitHub would render it."""
    return _count(_read_mentions(markdown, handle), handle)


def _is_stop(reading: _Reading, handle: str) -> bool:
    """`@neo stop`, alone, any case, punctuation tolerated (`@NEO, stop!`)."""
    if _stop_pattern(handle).fullmatch(reading.text.strip()) is None:
        return False
    # Alone: the blocks not read, which do not name the handle, show nothing.
    return not any(text().strip() for text in reading.unread)


@functools.lru_cache(maxsize=8)
def _review_pattern(handle: str) -> re.Pattern[str]:
    return re.compile(_mention_pattern(handle).pattern + r"[\s,:]+review\b", re.IGNORECASE)


def _asks_review(reading: _Reading, handle: str) -> bool:
    """`@neo review`: `review` the first word after a mention."""
    return _review_pattern(handle).search(reading.text) is not None


# --- the payload fields triage reads ------------------------------------------


_IMPLAUSIBLE = "implausible"  # the pydantic error type of every check below
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
            raise PydanticCustomError(_IMPLAUSIBLE, "not a {what} GitHub sends", {"what": what})
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
        raise PydanticCustomError(_IMPLAUSIBLE, "not a repository full_name GitHub sends")
    return value


def _positive(value: int) -> int:
    # GitHub numbers issues and ids from 1; the worker takes 0 for "no thread".
    if value < 1:
        raise PydanticCustomError(_IMPLAUSIBLE, "not a number GitHub sends")
    return value


_Login = Annotated[str, _plausible("login", _LOGIN)]
_Word = Annotated[str, _plausible("word", _WORD)]
_FullName = Annotated[str, AfterValidator(_full_name)]
_Number = Annotated[int, AfterValidator(_positive)]
# A commit id: SHA-1, or SHA-256 for repositories that use it.
_Sha = Annotated[str, _plausible("commit sha", re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}"))]


class _Model(BaseModel):
    # strict: an id is an int, not "123" nor true; extra fields are ignored.
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class _User(_Model):
    login: _Login
    type: _Word | None = None


class _Repository(_Model):
    full_name: _FullName


class _Installation(_Model):
    id: _Number


class _Common(_Model):
    sender: _User
    repository: _Repository
    installation: _Installation | None = None


class _Issue(_Model):
    id: _Number
    number: _Number
    title: str
    body: str | None = None
    # GitHub marks these optional or nullable: no user for a deleted account
    # (GitHub shows "ghost"), and older deliveries lack `locked`.
    user: _User | None = None
    author_association: _Word | None = None
    locked: bool | None = None
    # Present (an object) when the issue is a pull request.
    pull_request: dict[str, Any] | None = None


class _PullRequest(_Model):
    number: _Number
    locked: bool | None = None
    # Its author: a pull request the App opened gets answered without a mention.
    user: _User | None = None


class _PullRequestFull(_Model):
    id: _Number
    number: _Number
    title: str
    body: str | None = None
    user: _User | None = None
    author_association: _Word | None = None
    locked: bool | None = None


class _Comment(_Model):
    id: _Number
    body: str | None = None
    user: _User | None = None
    author_association: _Word | None = None


class _IssueCommentPayload(_Common):
    issue: _Issue
    comment: _Comment


class _IssuesPayload(_Common):
    issue: _Issue


class _BodyChange(_Model):
    from_: str | None = Field(default=None, alias="from")


class _Changes(_Model):
    body: _BodyChange | None = None


class _IssuesEditedPayload(_IssuesPayload):
    changes: _Changes | None = None


class _Label(_Model):
    name: str


class _IssuesLabeledPayload(_IssuesPayload):
    label: _Label | None = None


class _IssuesAssignedPayload(_IssuesPayload):
    assignee: _User | None = None


class _ReviewCommentPayload(_Common):
    pull_request: _PullRequest
    comment: _Comment


class _PullRequestLabeledPayload(_Common):
    pull_request: _PullRequestFull
    label: _Label | None = None


class _PullRequestReviewRequestedPayload(_Common):
    pull_request: _PullRequestFull
    # Absent when a team was asked.
    requested_reviewer: _User | None = None


class _Review(_Comment):
    # "approved", "changes_requested", "commented", ...; GitHub's case varies.
    state: str | None = None


class _ReviewPayload(_Common):
    pull_request: _PullRequest
    review: _Review


class _HeadRepository(_Model):
    id: _Number


class _PullHeadRef(_Model):
    ref: str
    repo: _HeadRepository


class _MinimalPull(_Model):
    number: _Number
    head: _PullHeadRef


class _RepositoryWithId(_Repository):
    id: _Number


class _CiCommon(_Model):
    """What every CI completion carries: who, where, which installation."""

    sender: _User
    repository: _RepositoryWithId
    installation: _Installation | None = None


class _CheckSuiteRef(_Model):
    head_branch: str | None = None


class _CheckRun(_Model):
    id: _Number
    name: str
    head_sha: _Sha
    conclusion: str | None = None
    check_suite: _CheckSuiteRef | None = None
    pull_requests: list[_MinimalPull] = []


class _CheckRunPayload(_CiCommon):
    check_run: _CheckRun


class _App(_Model):
    name: str


class _CheckSuite(_Model):
    id: _Number
    head_branch: str | None = None
    head_sha: _Sha
    conclusion: str | None = None
    app: _App | None = None
    pull_requests: list[_MinimalPull] = []


class _CheckSuitePayload(_CiCommon):
    check_suite: _CheckSuite


class _WorkflowRun(_Model):
    id: _Number
    name: str | None = None
    head_branch: str | None = None
    head_sha: _Sha
    conclusion: str | None = None
    pull_requests: list[_MinimalPull] = []


class _WorkflowRunPayload(_CiCommon):
    workflow_run: _WorkflowRun


# --- triage -----------------------------------------------------------------


def _body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _is_bot(user: _User) -> bool:
    return user.type == "Bot" or user.login.lower().endswith("[bot]")


def _who_blocks(people: list[_User | None], rules: Rules) -> Reason | None:
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


def _issue_text(issue: _Issue) -> str:
    return f"{issue.title}\n\n{issue.body or ''}".rstrip()


@dataclass(frozen=True, slots=True)
class _Trigger:
    """What every request needs, gathered from one payload shape."""

    common: _Common
    thread: Thread
    locked: bool
    trigger_id: int
    author_association: str
    instruction: str
    dedupe_key: str
    kind: RequestKind = "run"
    mode: JobMode = "task"


def _request(delivery: Delivery, trigger: _Trigger) -> list[JobRequest]:
    installation = trigger.common.installation
    return [
        JobRequest(
            kind=trigger.kind,
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
            mode=trigger.mode,
        )
    ]


def _gate(trigger: _Trigger, users: list[_User | None], rules: Rules) -> Ignore | None:
    blocked = _who_blocks(users, rules)
    if blocked is not None:
        return Ignore(blocked)
    if trigger.locked:
        return Ignore(Reason.LOCKED)
    return None


def _mentioned(
    delivery: Delivery, trigger: _Trigger, users: list[_User | None], rules: Rules, text: str
) -> list[JobRequest] | Ignore:
    """A request if `text` mentions the handle; a cancel if it says only `@neo stop`."""
    gated = _gate(trigger, users, rules)
    if gated is not None:
        return gated
    reading = _read_mentions(text, rules.handle)
    if not _count(reading, rules.handle):
        return Ignore(Reason.NO_MENTION)
    if _is_stop(reading, rules.handle):
        trigger = replace(trigger, kind="cancel")
    elif trigger.thread.is_pull_request and _asks_review(reading, rules.handle):
        trigger = replace(trigger, mode="review")
    return _request(delivery, trigger)


def _issue_thread(common: _Common, issue: _Issue) -> Thread:
    return Thread(
        repository=common.repository.full_name,
        number=issue.number,
        is_pull_request=issue.pull_request is not None,
    )


def _issue_comment_created(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _IssueCommentPayload.model_validate(delivery.payload)
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


def _issue_trigger(p: _IssuesPayload, dedupe_key: str) -> _Trigger:
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
    p = _IssuesPayload.model_validate(delivery.payload)
    trigger = _issue_trigger(p, f"issues.opened:{p.issue.id}")
    return _mentioned(delivery, trigger, [p.sender], rules, p.issue.body or "")


def _issues_edited(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _IssuesEditedPayload.model_validate(delivery.payload)
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
    p = _IssuesLabeledPayload.model_validate(delivery.payload)
    # Labelling again after removing the label is a new request: key by delivery.
    trigger = _issue_trigger(p, f"labeled:{p.issue.id}:{delivery.delivery_id}")
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    # Label names are case-insensitive on GitHub.
    if p.label is None or p.label.name.lower() != rules.trigger_label.lower():
        return Ignore(Reason.OTHER_LABEL)
    return _request(delivery, trigger)


def _issues_assigned(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _IssuesAssignedPayload.model_validate(delivery.payload)
    trigger = _issue_trigger(p, f"assigned:{p.issue.id}:{delivery.delivery_id}")
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    if p.assignee is None or p.assignee.login.lower() != rules.app_bot_login.lower():
        return Ignore(Reason.OTHER_ASSIGNEE)
    return _request(delivery, trigger)


def _pr_thread(p: _ReviewCommentPayload | _ReviewPayload) -> Thread:
    return Thread(
        repository=p.repository.full_name,
        number=p.pull_request.number,
        is_pull_request=True,
    )


def _review_comment_created(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _ReviewCommentPayload.model_validate(delivery.payload)
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
    p = _ReviewPayload.model_validate(delivery.payload)
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


def _changes_asked_of_app(p: _ReviewPayload, rules: Rules) -> bool:
    """Whether the review requests changes on a pull request the App opened."""
    author = p.pull_request.user
    own = author is not None and author.login.lower() == rules.app_bot_login.lower()
    return own and (p.review.state or "").lower() == "changes_requested"


def _pull_request_trigger(
    p: _PullRequestLabeledPayload | _PullRequestReviewRequestedPayload, dedupe_key: str
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
        mode="review",
    )


def _pull_request_labeled(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _PullRequestLabeledPayload.model_validate(delivery.payload)
    trigger = _pull_request_trigger(p, f"review-label:{p.pull_request.id}:{delivery.delivery_id}")
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    if p.label is None or p.label.name.lower() != rules.review_label.lower():
        return Ignore(Reason.OTHER_LABEL)
    return _request(delivery, trigger)


def _review_requested(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _PullRequestReviewRequestedPayload.model_validate(delivery.payload)
    key = f"review-requested:{p.pull_request.id}:{delivery.delivery_id}"
    trigger = _pull_request_trigger(p, key)
    gated = _gate(trigger, [p.sender], rules)
    if gated is not None:
        return gated
    asked = p.requested_reviewer
    if asked is None or asked.login.lower() != rules.app_bot_login.lower():
        return Ignore(Reason.OTHER_ASSIGNEE)
    return _request(delivery, trigger)


# --- CI completions: a red check on a pull request's branch ------------------------

# The conclusions that say the code is wrong; cancelled, neutral, skipped,
# stale and action_required say nothing about it.
_RED = frozenset({"failure", "timed_out"})


def _ci_request(
    delivery: Delivery,
    p: _CiCommon,
    *,
    trigger_id: int,
    what: str,
    conclusion: str | None,
    head_branch: str | None,
    head_sha: str,
    pulls: list[_MinimalPull],
) -> list[JobRequest] | Ignore:
    """A repair of the pull request whose branch went red; whose push it was, the
    worker decides (it reads GitHub). The senders here are bots: not gated."""
    if conclusion not in _RED:
        return Ignore(Reason.NOT_RED)
    # Same repository and the same branch: a fork's pull request is never Neo's to push.
    pull = next(
        (
            pr
            for pr in pulls
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
            kind="run",
            thread=Thread(repository=repository, number=pull.number, is_pull_request=True),
            installation_id=installation.id if installation is not None else None,
            event=delivery.event_action,
            trigger_id=trigger_id,
            author=p.sender.login,
            author_association=NO_ASSOCIATION,
            # Neutral words of Neo's own: only the check's name comes from the payload.
            instruction=f"CI failed on {head_sha}: {what} ended {conclusion}.",
            # Every delivery about one red commit (its suite, its runs, its
            # workflows) makes one job.
            dedupe_key=f"ci-repair:{repository.lower()}:{head_sha}",
            delivery_id=delivery.delivery_id,
            mode="repair",
            head_sha=head_sha,
        )
    ]


def _named(name: str) -> str:
    return '"' + " ".join(name.split())[:100].replace('"', "'") + '"'


def _check_run_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _CheckRunPayload.model_validate(delivery.payload)
    run = p.check_run
    return _ci_request(
        delivery,
        p,
        trigger_id=run.id,
        what=f"the check run {_named(run.name)}",
        conclusion=run.conclusion,
        head_branch=run.check_suite.head_branch if run.check_suite else None,
        head_sha=run.head_sha,
        pulls=run.pull_requests,
    )


def _check_suite_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _CheckSuitePayload.model_validate(delivery.payload)
    suite = p.check_suite
    app = f" of {_named(suite.app.name)}" if suite.app else ""
    return _ci_request(
        delivery,
        p,
        trigger_id=suite.id,
        what=f"the check suite{app}",
        conclusion=suite.conclusion,
        head_branch=suite.head_branch,
        head_sha=suite.head_sha,
        pulls=suite.pull_requests,
    )


def _workflow_run_completed(delivery: Delivery, rules: Rules) -> list[JobRequest] | Ignore:
    p = _WorkflowRunPayload.model_validate(delivery.payload)
    run = p.workflow_run
    return _ci_request(
        delivery,
        p,
        trigger_id=run.id,
        what=f"the workflow run {_named(run.name or 'unnamed')}",
        conclusion=run.conclusion,
        head_branch=run.head_branch,
        head_sha=run.head_sha,
        pulls=run.pull_requests,
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
        if all(e["type"] == _IMPLAUSIBLE for e in error.errors(include_url=False)):
            return Ignore(Reason.IMPLAUSIBLE)
        return Ignore(Reason.MALFORMED)
