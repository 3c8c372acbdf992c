"""What a task reads of its thread before the run, as the prompt needs it.

`read_plan` says, from the request's trigger, what to read besides the
thread: the review comment and where it sits in the diff, a review's inline
comments, a review job's earlier comments, the pull request's diff. One
client call (`RepoClient.read_for`) reads it all; `thread_context` turns the
answer into what the prompt needs, and on Neo's own pull request the review
threads the job answers. Pure but for `read_thread`.
"""

from __future__ import annotations

from bot.github.client import RepoClient
from bot.github.models import Comment, ReadPlan, ReviewComment, ThreadRead, TriggerRead
from bot.jobs import JobKind, JobRequest, TriggerKind
from bot.worker.prompt import InlineComment, Post, ReviewLocation
from bot.worker.services import JobServices
from bot.worker.spec import ThreadContext
from bot.worker.threads import answered_threads

__all__ = ["read_plan", "read_thread", "thread_context"]


async def read_thread(
    services: JobServices, request: JobRequest, github: RepoClient
) -> ThreadContext:
    read = await github.read_for(read_plan(request))
    if read.review_missing is not None:
        # Context only (the workflow's prompt is the task): logged, not fatal.
        services.log("review_read_failed", review=request.trigger_id, error=read.review_missing)
    return thread_context(read, request, github.bot_login)


def read_plan(request: JobRequest) -> ReadPlan:
    """What `request`'s trigger needs read besides its thread."""
    pull_request = request.thread.is_pull_request
    reviewing = request.kind is JobKind.REVIEW
    review = request.trigger is TriggerKind.REVIEW and pull_request
    return ReadPlan(
        pull_request=pull_request,
        # A review job's diff comes from the host's git (the runner's); the threads from GitHub.
        diff=pull_request and not reviewing,
        earlier=reviewing,
        review_comment=request.trigger_id
        if request.trigger is TriggerKind.REVIEW_COMMENT
        else None,
        review=request.trigger_id if review else None,
        # For a workflow's run: the review that started it, as context.
        review_body=review and request.instruction_from_workflow,
    )


def thread_context(read: TriggerRead, request: JobRequest, bot: str) -> ThreadContext:
    """What the prompt needs of a thread as GitHub gave it; `request` names the trigger."""
    thread = _thread(read.thread, request)
    from_workflow = request.instruction_from_workflow
    if from_workflow and request.trigger is TriggerKind.COMMENT:
        thread.trigger_post = next((c for c in thread.comments if c.id == request.trigger_id), None)
    thread.earlier = tuple(_inline_comment(c) for c in read.earlier)
    thread.diff, thread.diff_missing = read.diff, read.diff_missing
    pull = read.thread.pull
    own = pull is not None and (pull.author or "").lower() == bot.lower()
    inline = read.review_comment
    if inline is not None:
        if own:
            thread.answer = answered_threads([inline])
        thread.review = _location(inline)
        if inline.comment.author_id is not None:
            thread.requester_id = inline.comment.author_id
        if from_workflow:
            thread.trigger_post = _post(inline.comment)
    elif request.trigger is TriggerKind.REVIEW and request.thread.is_pull_request:
        if read.review is not None:
            review = read.review
            thread.trigger_post = Post(
                author=review.author,
                association=review.association,
                body=review.body,
                created_at=review.submitted_at,
                id=review.id,
            )
        thread.inline = tuple(_inline_comment(c) for c in read.review_comments)
        if own:
            thread.answer = answered_threads(read.review_comments)
    return thread


def _thread(read: ThreadRead, request: JobRequest) -> ThreadContext:
    issue = read.issue
    opening = Post(
        author=issue.author,
        association=issue.association,
        body=issue.body,
        created_at=issue.created_at,
        body_html=issue.body_html,
    )
    comments = tuple(_post(c) for c in read.comments)
    requester_id = next((c.author_id for c in read.comments if c.id == request.trigger_id), None)
    thread = ThreadContext(issue.title, opening, comments, requester_id)
    if read.pull is not None:
        head_repo = read.pull.head_repository
        thread.head_ref = read.pull.head_ref
        thread.head_sha = read.pull.head_sha
        thread.same_repository = (head_repo or "").lower() == request.thread.repository.lower()
        thread.pr_url = read.pull.html_url
    return thread


def _inline_comment(comment: ReviewComment) -> InlineComment:
    return InlineComment(post=_post(comment.comment), location=_location(comment))


def _post(comment: Comment) -> Post:
    return Post(
        author=comment.author,
        association=comment.association,
        body=comment.body,
        created_at=comment.created_at,
        is_bot=comment.author_is_bot,
        id=comment.id,
        body_html=comment.body_html,
    )


def _location(inline: ReviewComment) -> ReviewLocation:
    return ReviewLocation(
        path=inline.path,
        line=inline.line,
        start_line=inline.start_line,
        side=inline.side,
        diff_hunk=inline.diff_hunk,
    )
