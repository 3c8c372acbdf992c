"""The review the model drafts, and how its comments are placed on the diff (pure).

A comment whose lines are not all in the diff cannot be posted inline (GitHub
refuses the whole review with 422): it is folded into the summary instead, so
the review still goes out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.review.positions import Position, Side

__all__ = ["InlineDraft", "ReviewDraft", "fold", "place"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InlineDraft:
    """One inline comment: on `line` of `path`, or on `start_line`..`line`."""

    path: str
    line: int
    body: str
    side: Side = "RIGHT"
    start_line: int | None = None
    start_side: Side | None = None

    def positions(self) -> tuple[Position, ...]:
        """Every line the comment covers; all must be in the diff."""
        first = self.line if self.start_line is None else self.start_line
        start_side = self.start_side or self.side
        if start_side != self.side:
            return (
                Position(self.path, start_side, first),
                Position(self.path, self.side, self.line),
            )
        return tuple(Position(self.path, self.side, n) for n in range(first, self.line + 1))

    def where(self) -> str:
        lines = str(self.line) if self.start_line is None else f"{self.start_line}-{self.line}"
        return f"{self.path}:{lines}"

    def to_json(self) -> dict[str, object]:
        """The form of one of the reviews API's `comments`."""
        data: dict[str, object] = {
            "path": self.path,
            "line": self.line,
            "side": self.side,
            "body": self.body,
        }
        if self.start_line is not None and self.start_line != self.line:
            data["start_line"] = self.start_line
            data["start_side"] = self.start_side or self.side
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewDraft:
    """What a review job produced: the summary and the comments to place inline."""

    summary: str
    comments: tuple[InlineDraft, ...] = ()
    # Comments on lines outside the diff: they go into the summary.
    folded: tuple[InlineDraft, ...] = ()

    def body(self) -> str:
        return fold(self.summary, self.folded)


def place(
    comments: Iterable[InlineDraft], positions: frozenset[Position]
) -> tuple[tuple[InlineDraft, ...], tuple[InlineDraft, ...]]:
    """`comments` split into those the diff can hold inline and those it cannot."""
    inline: list[InlineDraft] = []
    outside: list[InlineDraft] = []
    for comment in comments:
        backwards = comment.start_line is not None and comment.start_line > comment.line
        fits = not backwards and all(p in positions for p in comment.positions())
        (inline if fits else outside).append(comment)
    return tuple(inline), tuple(outside)


def fold(summary: str, folded: Iterable[InlineDraft]) -> str:
    """The review's body: the summary, then each comment that could not go inline."""
    parts = [summary.strip() or "Review by Neo."]
    notes = [f"- `{c.where()}` (not a line of this diff): {c.body.strip()}" for c in folded]
    if notes:
        parts.append("**On lines outside the diff**\n\n" + "\n".join(notes))
    return "\n\n".join(parts)
