"""The `review_comment` tool: the model drafts the review's inline comments one by one.

Given only to review jobs. Each comment is checked against the diff at once,
so the model learns when a line is outside it; the host folds such comments
into the summary rather than failing the review.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.review.draft import InlineDraft
from runner.review.positions import Position
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.schema import ToolInput, input_schema, parse

__all__ = ["ReviewCollector", "ReviewCommentTool"]

# GitHub caps a comment's body at 65536 characters; a review comment is far shorter.
_MAX_BODY = 20_000


class ReviewCollector:
    """The comments drafted so far, in order, without exact repeats."""

    def __init__(self, positions: frozenset[Position]) -> None:
        self.positions = positions
        self._comments: list[InlineDraft] = []

    @property
    def comments(self) -> tuple[InlineDraft, ...]:
        return tuple(self._comments)

    def add(self, comment: InlineDraft) -> bool:
        """Keep `comment`; False when the same one (place and body) is already kept."""
        if any(_same(comment, kept) for kept in self._comments):
            return False
        self._comments.append(comment)
        return True


def _same(one: InlineDraft, other: InlineDraft) -> bool:
    return (one.path, one.line, one.body.strip()) == (other.path, other.line, other.body.strip())


class ReviewCommentInput(ToolInput):
    path: str = Field(min_length=1, description="The file's path, as the diff names it.")
    line: int = Field(ge=1, description="The (last) line commented on.")
    side: Literal["LEFT", "RIGHT"] = Field(
        default="RIGHT",
        description="RIGHT: the new file's line numbers (added or context lines);"
        " LEFT: the old file's (removed lines).",
    )
    start_line: int | None = Field(
        default=None, ge=1, description="The first line of a multi-line comment."
    )
    body: str = Field(
        min_length=1,
        max_length=_MAX_BODY,
        description="Markdown. For a small fix, a ```suggestion block with the replacement"
        " of exactly the lines commented on.",
    )


SPEC = ToolSpec(
    name="review_comment",
    description=(
        "Add one inline comment to the pull request review you are writing. It must point"
        " at lines of the diff under review (a hunk's added, removed or context lines)."
        " Call it once per point; the review is submitted as one when you finish, with"
        " your final answer as its summary. Never repeat a point an earlier review"
        " thread already made."
    ),
    input_schema=input_schema(ReviewCommentInput),
)


class ReviewCommentTool:
    def __init__(self, collector: ReviewCollector) -> None:
        self._collector = collector

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        given = parse(ReviewCommentInput, args)
        if given.start_line is not None and given.start_line > given.line:
            raise ToolError("start_line must not be after line")
        comment = InlineDraft(
            path=given.path,
            line=given.line,
            side=given.side,
            start_line=given.start_line if given.start_line != given.line else None,
            body=given.body,
        )
        if not self._collector.add(comment):
            return ToolOutput(f"already noted: {comment.where()} holds a comment with this text")
        outside = [p for p in comment.positions() if p not in self._collector.positions]
        if outside:
            return ToolOutput(
                f"noted, but {comment.where()} ({comment.side}) is not all in the diff: it"
                " will go into the review's summary, not inline"
            )
        return ToolOutput(f"noted: {comment.where()}")
