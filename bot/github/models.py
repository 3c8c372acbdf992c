"""What Neo reads from GitHub, as frozen values: githubkit's models stop in bot/github/."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Comment",
    "FileRead",
    "InstalledRepository",
    "Issue",
    "PullRequest",
    "PullRequestRef",
    "ReadPlan",
    "Review",
    "ReviewComment",
    "ReviewThread",
    "SubmittedReview",
    "ThreadRead",
    "TriggerRead",
]


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment on an issue or pull request (or a review's body, as `Review` gives it)."""

    id: int
    author: str  # "ghost" when GitHub has no user for it (a deleted account)
    author_id: int | None
    author_is_bot: bool
    association: str  # GitHub's author_association: OWNER, MEMBER, NONE, ...
    body: str
    created_at: str
    # GitHub's rendering of `body`, where it was asked for (a thread's posts): its
    # attachments' signed image addresses.
    body_html: str = ""


@dataclass(frozen=True, slots=True)
class Issue:
    """An issue or pull request's opening post."""

    number: int
    title: str
    author: str
    association: str
    body: str
    created_at: str
    body_html: str = ""


@dataclass(frozen=True, slots=True)
class PullRequest:
    number: int
    head_ref: str
    head_repository: str | None  # "owner/name"; None when the fork is gone
    html_url: str
    author: str | None = None  # who opened it; None for a deleted account
    head_sha: str | None = None  # the head commit as read


@dataclass(frozen=True, slots=True)
class ThreadRead:
    """An issue or pull request with every comment, oldest first; `pull` for a PR."""

    issue: Issue
    comments: tuple[Comment, ...]
    pull: PullRequest | None = None


@dataclass(frozen=True, slots=True)
class Review:
    id: int
    author: str
    association: str
    body: str
    submitted_at: str


@dataclass(frozen=True, slots=True)
class SubmittedReview:
    """A pull request review Neo submitted."""

    id: int
    url: str  # html_url


@dataclass(frozen=True, slots=True)
class ReviewComment:
    """An inline comment on a pull request's diff, and where it points."""

    comment: Comment
    path: str
    # An outdated comment has no line in the current diff, only its original one.
    line: int | None
    start_line: int | None
    side: str | None
    diff_hunk: str
    # The thread's first comment, when this one is a reply in it.
    in_reply_to: int | None = None


@dataclass(frozen=True, slots=True)
class ReviewThread:
    """A pull request's review thread, as GitHub's GraphQL API gives it: its first comment."""

    id: str  # the GraphQL node id, what resolving takes
    resolved: bool
    outdated: bool  # the lines it points at changed since
    author: str  # GraphQL's login: a Bot's has no "[bot]" suffix
    body: str
    path: str
    line: int | None  # None once outdated
    comment_id: int | None = None  # the first comment's REST id (GraphQL's databaseId)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """What a job reads of its thread besides the issue and its comments."""

    # The pull request itself: its head, its author.
    pull_request: bool = False
    # Its diff against the base.
    diff: bool = False
    # Every review comment on it so far (a review job's).
    earlier: bool = False
    # A review comment that started the job, and where it points.
    review_comment: int | None = None
    # A submitted review that started it: its inline comments; with
    # `review_body`, the review itself too.
    review: int | None = None
    review_body: bool = False


@dataclass(frozen=True, slots=True)
class TriggerRead:
    """A thread as a job's trigger needs it, read by `RepoClient.read_for(plan)`."""

    thread: ThreadRead
    diff: str | None = None
    # Why GitHub did not give the diff (context, not the work: the job goes on).
    diff_missing: str | None = None
    earlier: tuple[ReviewComment, ...] = ()
    review_comment: ReviewComment | None = None
    review: Review | None = None
    # Why GitHub did not give the review asked for with `review_body`.
    review_missing: str | None = None
    review_comments: tuple[ReviewComment, ...] = ()


@dataclass(frozen=True, slots=True)
class FileRead:
    """A conditional read of a file: its text unless unchanged since `etag`."""

    text: str | None  # None: no such file (or unchanged: see `modified`)
    etag: str | None
    modified: bool = True  # False: GitHub answered 304 to the ETag given


@dataclass(frozen=True, slots=True)
class PullRequestRef:
    number: int
    url: str  # html_url
    created: bool  # False: an open PR with this head existed and was updated
    draft: bool = False
    # A draft was asked for and the repository allows none (a private
    # repository on a free plan): this regular PR was opened instead.
    draft_refused: bool = False


@dataclass(frozen=True, slots=True)
class InstalledRepository:
    """A repository an installation can see, and Neo could push to."""

    full_name: str  # "owner/name", as GitHub spells it
    default_branch: str
