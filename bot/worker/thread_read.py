"""What a task reads of its thread before the run, as the prompt needs it.

The thread with all its comments, and what its trigger points at: the review
comment and where it sits in the diff, a review's inline comments, a review
job's earlier comments, the pull request's diff; on Neo's own pull request,
the review threads the job answers.
"""

from __future__ import annotations

from bot.github.client import GitHubError, RepoClient
from bot.github.models import Comment, ReviewComment, Thread
from bot.jobs import JobRequest
from bot.worker.prompt import InlineComment, Post, ReviewLocation
from bot.worker.services import JobServices
from bot.worker.spec import ThreadContext
from bot.worker.threads import answered_threads

__all__ = ["read_thread", "thread_context"]

_REVIEW_COMMENT = "pull_request_review_comment."
_REVIEW = "pull_request_review."


async def read_thread(
    services: JobServices, request: JobRequest, github: RepoClient
) -> ThreadContext:
    read = await github.read_thread(pull_request=request.thread.is_pull_request)
    thread = thread_context(read, request)
    from_workflow = request.instruction_from_workflow
    if from_workflow and request.event.startswith("issue_comment."):
        thread.trigger_post = next((c for c in thread.comments if c.id == request.trigger_id), None)
    if request.mode == "review":
        # The diff comes from the host's git (the runner's); the threads from GitHub.
        thread.earlier = tuple(
            InlineComment(post=_post(c.comment), location=_location(c))
            for c in await github.pull_review_comments()
        )
    elif thread.pr_url is not None:
        try:
            thread.diff = await github.pull_request_diff()
        except GitHubError as error:
            # Context, not the work: the model can still read the branch with git.
            thread.diff_missing = f"GitHub did not give it ({error})"
    own = read.pull is not None and (read.pull.author or "").lower() == github.bot_login.lower()
    if request.event.startswith(_REVIEW_COMMENT):
        inline = await github.read_review_comment(request.trigger_id)
        if own:
            thread.answer = answered_threads([inline])
        thread.review = _location(inline)
        if inline.comment.author_id is not None:
            thread.requester_id = inline.comment.author_id
        if from_workflow:
            thread.trigger_post = _post(inline.comment)
    elif request.event.startswith(_REVIEW) and request.thread.is_pull_request:
        if from_workflow:
            thread.trigger_post = await _review_post(services, github, request)
        comments = await github.read_review_comments(request.trigger_id)
        thread.inline = tuple(
            InlineComment(post=_post(c.comment), location=_location(c)) for c in comments
        )
        if own:
            thread.answer = answered_threads(comments)
    return thread


async def _review_post(
    services: JobServices, github: RepoClient, request: JobRequest
) -> Post | None:
    """The review that started a workflow's run, or None when GitHub does not give it.

    Context only (the workflow's prompt is the task), so a failure is logged, not fatal.
    """
    try:
        review = await github.read_review(request.trigger_id)
    except GitHubError as error:
        services.log("review_read_failed", review=request.trigger_id, error=str(error))
        return None
    return Post(
        author=review.author,
        association=review.association,
        body=review.body,
        created_at=review.submitted_at,
        id=review.id,
    )


def thread_context(read: Thread, request: JobRequest) -> ThreadContext:
    """What the prompt needs of a thread as GitHub gave it; `request` names the trigger."""
    issue = read.issue
    opening = Post(
        author=issue.author,
        association=issue.association,
        body=issue.body,
        created_at=issue.created_at,
    )
    comments = tuple(_post(c) for c in read.comments)
    requester_id = next((c.author_id for c in read.comments if c.id == request.trigger_id), None)
    thread = ThreadContext(issue.title, opening, comments, requester_id)
    if read.pull is not None:
        head_repo = read.pull.head_repository
        thread.head_ref = read.pull.head_ref
        thread.same_repository = (head_repo or "").lower() == request.thread.repository.lower()
        thread.pr_url = read.pull.html_url
    return thread


def _post(comment: Comment) -> Post:
    return Post(
        author=comment.author,
        association=comment.association,
        body=comment.body,
        created_at=comment.created_at,
        is_bot=comment.author_is_bot,
        id=comment.id,
    )


def _location(inline: ReviewComment) -> ReviewLocation:
    return ReviewLocation(
        path=inline.path,
        line=inline.line,
        start_line=inline.start_line,
        side=inline.side,
        diff_hunk=inline.diff_hunk,
    )
