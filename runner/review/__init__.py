"""A pull request review: the diff's commentable lines, the comments the model drafts, the tool."""

from runner.review.draft import InlineDraft, ReviewDraft, fold, place
from runner.review.positions import Position, changed_files, commentable
from runner.review.tool import ReviewCollector, ReviewCommentTool

__all__ = [
    "InlineDraft",
    "Position",
    "ReviewCollector",
    "ReviewCommentTool",
    "ReviewDraft",
    "changed_files",
    "commentable",
    "fold",
    "place",
]
