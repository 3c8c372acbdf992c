"""The images a task shows: those attached to the opening post and to the comment
that asked, downloaded on the host before the run (at most five in all).

Only the posts the requester's task is about: a screenshot in some other
comment of the thread is context the model can ask for, not the task. What
could not be had is logged and left out; the run goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.github.attachments import DEFAULT_LIMITS, Attachment, AttachmentLimits
from bot.github.client import RepoClient
from bot.jobs import JobRequest
from bot.worker.spec import ThreadContext
from bot.worker.untrusted import Post
from runner.images import TaskImage

__all__ = ["task_images", "task_posts"]


def task_posts(thread: ThreadContext, request: JobRequest) -> list[tuple[str, Post]]:
    """The posts whose images the task shows, each with the label its images get."""
    posts = [(f"the opening post by @{thread.opening.author}", thread.opening)]
    trigger = thread.trigger_post or next(
        (post for post in thread.comments if post.id is not None and post.id == request.trigger_id),
        None,
    )
    if trigger is not None and trigger.body_html != thread.opening.body_html:
        posts.append((f"the comment by @{trigger.author} that asked for this", trigger))
    return [(label, post) for label, post in posts if "<img" in post.body_html]


async def task_images(
    thread: ThreadContext,
    request: JobRequest,
    github: RepoClient,
    log: Callable[..., Any],
    limits: AttachmentLimits = DEFAULT_LIMITS,
) -> tuple[TaskImage, ...]:
    """The task's images, downloaded together within `limits`; what was skipped is logged."""
    sources: list[tuple[str, str]] = []
    for label, post in task_posts(thread, request):
        sources += [(label, url) for url in github.attachments_in(post.body_html)]
    if len(sources) > limits.count:
        log("images_left_out", count=len(sources) - limits.count)
    fetched = await github.attached_images([url for _, url in sources], limits)
    images: list[TaskImage] = []
    for (label, _), got in zip(sources, fetched, strict=False):
        if isinstance(got, Attachment):
            images.append(TaskImage(label, got.media_type, got.data))
        else:
            log("image_skipped", where=label, why=got.why)
    return tuple(images)
