"""A review job's review as it goes to GitHub: no repeats, neutralised, and its report (pure).

The runner places the model's comments on the diff; here the comments an
earlier review already made are dropped, the text is made safe to post, Neo's
own threads the new commits fixed are picked to resolve, and the report says
where the one review is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.github.models import ReviewThread
from bot.jobs import Conclusion
from bot.worker.progress import Outcome
from bot.worker.prompt import InlineComment
from bot.worker.untrusted import neutralise
from runner.job import JobResult
from runner.review import InlineDraft, ReviewDraft

__all__ = ["all_folded", "fixed_threads", "review_outcome", "review_payload", "unrepeated"]


def unrepeated(draft: ReviewDraft, earlier: Iterable[InlineComment]) -> ReviewDraft:
    """`draft` without the comments an earlier one made already: same file, line and text."""
    seen = {
        (c.location.path, c.location.line, c.post.body.strip())
        for c in earlier
        if c.location.line is not None
    }

    def new(comment: InlineDraft) -> bool:
        return (comment.path, comment.line, comment.body.strip()) not in seen

    return replace(
        draft,
        comments=tuple(filter(new, draft.comments)),
        folded=tuple(filter(new, draft.folded)),
    )


def all_folded(draft: ReviewDraft) -> ReviewDraft:
    """Every comment in the summary: for when GitHub refuses the inline ones after all."""
    return replace(draft, comments=(), folded=(*draft.comments, *draft.folded))


def review_payload(draft: ReviewDraft) -> tuple[str, list[dict[str, object]]]:
    """The review's body and `comments` for the reviews API; the model's text neutralised."""
    comments = [replace(c, body=neutralise(c.body)).to_json() for c in draft.comments]
    return neutralise(draft.body()), comments


def fixed_threads(threads: Iterable[ReviewThread], bot_login: str) -> tuple[str, ...]:
    """The ids of the bot's open threads whose lines changed since: what the commits fixed.

    GraphQL names a Bot without REST's "[bot]"; a human's thread is never picked,
    nor one whose line is still as it was.
    """
    login = bot_login.removesuffix("[bot]")
    return tuple(t.id for t in threads if t.author == login and t.outdated and not t.resolved)


def review_outcome(
    result: JobResult, draft: ReviewDraft, url: str, *, resolved: int = 0
) -> Outcome:
    """The report of a review submitted at `url`, after resolving `resolved` old threads."""
    inline = len(draft.comments)
    said = f"[One review]({url}) with {inline} inline comment{'s' if inline != 1 else ''}"
    if draft.folded:
        said += f", and {len(draft.folded)} on lines outside the diff in its summary"
    if resolved:
        said += (
            f"; resolved {resolved} earlier thread{'s' if resolved != 1 else ''} of Neo's "
            "whose lines changed"
        )
    return Outcome(
        conclusion=Conclusion.SUCCESS,
        summary=f"{said}. Nothing was pushed.",
        review_url=url,
        usage=result.usage,
        cost_usd=result.cost_usd,
        duration_ms=result.duration_ms,
        num_turns=result.num_turns,
        models=result.models,
        fallback_reason=result.fallback_reason,
        setup=result.setup,
    )
