"""The subject line of a job's commit and pull request: the change, in the model's words.

Pure. The system prompt asks the model to open its summary with one line
saying what the change does, as a commit subject would; `summary_subject`
takes that line when it is one (prose, not a heading or a lead-in to a
list, not the issue's title again) and brings it to a conventional length.
A summary with no such line gets `files_subject`, from the paths the commit
changed: a fact, where the issue's title would describe the problem, not
the fix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_SUBJECT",
    "CommitText",
    "files_subject",
    "summary_subject",
]

# Git's and GitHub's convention: a subject past 72 characters is cut in
# `git log --oneline`, in shortlogs and in GitHub's commit list.
MAX_SUBJECT: Final = 72
# Fewer words than this say nothing of the change ("Done.", "Fixed").
_MIN_WORDS = 3

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_LABEL = re.compile(
    r"^[*_]{0,2}(?:summary|subject|title|commit(?: message)?)[*_]{0,2}\s*:\s*[*_]{0,2}\s*",
    re.IGNORECASE,
)
_EMPHASIS = re.compile(r"^(\*\*|__|\*|_)(.+)\1$")
# Words that head a summary's sections, not a change.
_SECTION = re.compile(
    r"^(?:summary|changes?|changes made|what (?:i|was) (?:changed|did|done)|overview|"
    r"done|result|results|description|the fix|fix|verification|testing)\W*$",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`'\"])[.;!](?=\s)")
# Where a long line can end and still read whole: before its reason, means or aside.
_CLAUSE = re.compile(
    r",\s|\s[-–—]\s|\s\(|\s(?:so that|so|because|since|by|which|where|when|for|with|and|as)\s"
)
# Lead-ins a model writes before the line: "I've", "This change", "In this PR, I".
_PREAMBLE = re.compile(
    r"^(?:i(?:'ve| have)?|this (?:change|commit|pull request|pr))\s+", re.IGNORECASE
)


def _clean(line: str) -> str:
    """A line of Markdown as plain subject text: no heading, bullet or quote marks, no
    wrapping emphasis, no `Summary:` label, one space between words."""
    line = _QUOTE.sub("", line)
    line = _HEADING.sub("", line)
    line = _BULLET.sub("", line)
    line = " ".join(line.split())
    emphasis = _EMPHASIS.fullmatch(line)
    if emphasis:
        line = emphasis[2].strip()
    line = _LABEL.sub("", line)
    emphasis = _EMPHASIS.fullmatch(line)
    if emphasis:
        line = emphasis[2].strip()
    return line


def _first_line(summary: str) -> tuple[str, str] | None:
    """The summary's first line of text past section headings: (as written, cleaned)."""
    for raw in summary.splitlines():
        if not raw.strip():
            continue
        if _FENCE.match(raw):
            return None  # a summary that opens with code has no subject line
        cleaned = _clean(raw)
        if not cleaned or _SECTION.fullmatch(cleaned):
            continue  # a heading, or a bare "Summary:"; the line under it
        return raw, cleaned
    return None


def _same(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())

    return bool(b.strip()) and norm(a) == norm(b)


def _shortened(text: str) -> str:
    """`text` within MAX_SUBJECT: its first sentence or clause when that fits, else cut at
    a word; never with a code span left open."""
    if len(text) <= MAX_SUBJECT:
        return text
    end = _SENTENCE_END.search(text)
    cut = None
    if end is not None and end.start() <= MAX_SUBJECT:
        cut = text[: end.start()]
    else:
        ends = [m.start() for m in _CLAUSE.finditer(text) if m.start() <= MAX_SUBJECT]
        if ends:
            cut = text[: ends[-1]]
    if cut is None or len(cut.split()) < _MIN_WORDS:
        cut = text[: MAX_SUBJECT - 1]
        if " " in cut:
            cut = cut[: cut.rindex(" ")]
        cut = cut.rstrip(" ,;:-–—") + "…"
    if cut.count("`") % 2:
        cut = cut[: cut.rindex("`")].rstrip() + ("…" if cut.endswith("…") else "")
    return cut


def summary_subject(summary: str, *, avoid: str = "") -> str | None:
    """The change in one line, from the first line of the model's `summary`; None when
    it has none: it opens with code, a lead-in to a list ("Here is what I did:"), too
    few words to say anything, or a line that is `avoid` again (the issue's title)."""
    found = _first_line(summary)
    if found is None:
        return None
    text = found[1]
    if text.endswith(":"):
        return None
    text = _PREAMBLE.sub("", text) if _PREAMBLE.match(text) and len(text.split()) > 4 else text
    text = text.rstrip(" .")
    if len(text.split()) < _MIN_WORDS or _same(text, avoid):
        return None
    text = _shortened(text)
    return text[0].upper() + text[1:]


def files_subject(paths: Sequence[str]) -> str:
    """A subject from the paths a commit changed: `Change src/app.py and tests/test_app.py`."""
    names = [path.rstrip("/") for path in paths if path.strip()]
    if not names:
        return "Change the repository"
    if len(names) == 1:
        text = f"Change {names[0]}"
    elif len(names) == 2:
        text = f"Change {names[0]} and {names[1]}"
    else:
        text = f"Change {names[0]} and {len(names) - 1} more files"
    if len(text) <= MAX_SUBJECT:
        return text
    # A long path: its file name says enough.
    short = [name.rsplit("/", 1)[-1] for name in names]
    return _shortened(files_subject(short) if short != names else text)


@dataclass(frozen=True, slots=True)
class CommitText:
    """What a job's commit says besides its subject, and the subject's fallbacks.

    The subject is the summary's line (`summary_subject`), else `fallback`,
    else the files changed; `avoid` is a line that describes the ask rather
    than the change (the issue's title): a summary line that only repeats it
    is no subject. `body` follows after a blank line: references, trailers.
    """

    body: str = ""
    fallback: str = ""
    avoid: str = ""

    def message(self, summary: str, paths: Sequence[str]) -> tuple[str, str]:
        """The subject, and the whole message."""
        subject = (
            summary_subject(summary, avoid=self.avoid)
            or _shortened(" ".join(self.fallback.split()))
            or files_subject(paths)
        )
        body = self.body.strip("\n")
        return subject, f"{subject}\n\n{body}" if body else subject
