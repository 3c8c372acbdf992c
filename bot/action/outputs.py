"""What `neo action` leaves for the workflow: step outputs and the job summary.

    write_outputs(path, outcome.outputs())     # GITHUB_OUTPUT
    append_summary(path, outcome.summary())    # GITHUB_STEP_SUMMARY
    finish_step(context, outcome)              # both, where the runner gave their files

Rendering is pure; the two writers append (docs/architecture.md, "The Action").
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from bot.action.inputs import ActionContext

__all__ = [
    "OUTPUTS",
    "ActionConclusion",
    "ActionOutcome",
    "append_summary",
    "finish_step",
    "render_outputs",
    "write_outputs",
]

ActionConclusion = Literal["success", "no_changes", "incomplete", "failed", "cancelled", "skipped"]

# The outputs of action.yml, in its order.
OUTPUTS: Final = ("conclusion", "branch", "pr_url", "review_url", "session_id", "cost_usd")

_HEADINGS: Final[Mapping[str, str]] = {
    "success": "✅ Neo: done",
    "no_changes": "✅ Neo: done, no changes",
    "incomplete": "⚠️ Neo: incomplete, the work so far is in a draft pull request",
    "failed": "❌ Neo: failed",
    "cancelled": "🛑 Neo: cancelled",
    "skipped": "⏭️ Neo: skipped",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionOutcome:
    """How the step ended, as outputs and the summary tell it."""

    conclusion: ActionConclusion
    branch: str | None = None
    pr_url: str | None = None
    # A review job's one review; such a job opens no pull request.
    review_url: str | None = None
    session_id: str | None = None
    cost_usd: float | None = None
    # One line: why it failed, or why nothing ran.
    reason: str | None = None
    # The job's report (Markdown), as its progress comment ends.
    report: str | None = None
    # Where the report was posted, when it was.
    comment_url: str | None = None

    def outputs(self) -> dict[str, str]:
        cost = "" if self.cost_usd is None else f"{self.cost_usd:.4f}"
        return {
            "conclusion": self.conclusion,
            "branch": self.branch or "",
            "pr_url": self.pr_url or "",
            "review_url": self.review_url or "",
            "session_id": self.session_id or "",
            "cost_usd": cost,
        }

    def summary(self) -> str:
        """The job summary's Markdown: a heading, the one-line reason, the report."""
        parts = [f"### {_HEADINGS[self.conclusion]}"]
        if self.reason:
            label = {"failed": "Error", "incomplete": "Stopped"}.get(self.conclusion, "Why")
            parts.append(f"**{label}:** {_inline(self.reason)}")
        if self.pr_url:
            parts.append(f"Pull request: {self.pr_url}")
        if self.review_url:
            parts.append(f"Review: {self.review_url}")
        if self.report:
            parts.append(self.report.strip())
        elif self.comment_url:
            parts.append(f"Report: {self.comment_url}")
        return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    """`text` on one line as inline code, whatever backticks it holds."""
    line = " ".join(text.split())
    longest = 0
    run = 0
    for char in line:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def render_outputs(values: Mapping[str, str]) -> str:
    """`values` in GITHUB_OUTPUT's multi-line form, under a delimiter no value holds."""
    text = "\n".join([*values, *values.values()])
    delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    while delimiter in text:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    return "".join(f"{name}<<{delimiter}\n{value}\n{delimiter}\n" for name, value in values.items())


def write_outputs(path: Path, values: Mapping[str, str]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(render_outputs(values))


def append_summary(path: Path, markdown: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")


def finish_step(context: ActionContext | None, outcome: ActionOutcome) -> None:
    """Outputs and summary, when the runner gave their files."""
    if context is None:
        return
    try:
        if context.output_path is not None:
            write_outputs(context.output_path, outcome.outputs())
        if context.summary_path is not None:
            append_summary(context.summary_path, outcome.summary())
    except OSError as error:
        print(f"neo: warning: cannot write the step's outputs: {error.strerror}", file=sys.stderr)
