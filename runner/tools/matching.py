"""Where edit_file's old_string is in a file: exactly, else leniently, else nearly.

A model copies text from memory: a trailing space gone, an indentation level
off, a straight quote for a curly one. Each leniency compares a normalised
view of both texts and maps a match back onto the file's own characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

# What the model types for what the file holds.
_PUNCTUATION = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u00a0\u2007\u202f", " "),
    "\u2026": "...",
}

# Below this difflib ratio no text is named as the one the model meant.
MIN_SIMILARITY = 0.5


@dataclass(frozen=True, slots=True)
class Leniency:
    description: str
    leading: bool = False
    punctuation: bool = False


# Tried in order, each also allowing what the ones before it did.
LENIENCIES = (
    Leniency("ignoring trailing whitespace"),
    Leniency("ignoring indentation and trailing whitespace", leading=True),
    Leniency(
        "ignoring indentation, trailing whitespace and Unicode punctuation"
        " (curly quotes, dashes, non-breaking spaces, ellipses)",
        leading=True,
        punctuation=True,
    ),
)


@dataclass(frozen=True, slots=True)
class Found:
    """Where old_string is: every exact occurrence, or the places one leniency found.

    `replacement` is new_string, re-indented when a unique lenient match
    differs from old_string by a constant indentation.
    """

    spans: tuple[tuple[int, int], ...]
    replacement: str
    leniency: Leniency | None = None


def find(text: str, old: str, new: str) -> Found:
    exact = _occurrences(text, old)
    if exact:
        return Found(tuple((at, at + len(old)) for at in exact), new)
    for leniency in LENIENCIES:
        view, origin = _normalise(text, leniency)
        wanted, _ = _normalise(old, leniency)
        if not wanted.strip():
            continue
        starts = _occurrences(view, wanted)
        if len(starts) > 1:
            return Found(tuple((at, at) for at in starts), new, leniency)
        if starts:
            start, end = _span(text, view, origin, starts[0], len(wanted), leniency)
            replacement = new
            # A match that starts at a line break (apply_patch's hunks do) begins
            # a line as much as one at a line's start.
            begins_line = start == 0 or text[start - 1] == "\n" or text[start] == "\n"
            if leniency.leading and begins_line:
                replacement = _reindent(new, old.split("\n"), text[start:end].split("\n"))
            return Found(((start, end),), replacement, leniency)
    return Found((), new)


def nearest(text: str, old: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of the text most like `old`, if any is alike."""
    lines = [line.strip() for line in text.removesuffix("\n").split("\n")]
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    size = len(wanted)
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(wanted))
    best, where = MIN_SIMILARITY, None
    for first in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(lines[first : first + size]))
        # The cheap upper bounds first: most windows are nothing alike.
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, where = ratio, (first + 1, min(first + size, len(lines)))
    return where


def _occurrences(haystack: str, needle: str) -> list[int]:
    found: list[int] = []
    at = haystack.find(needle)
    while at >= 0:
        found.append(at)
        at = haystack.find(needle, at + len(needle))
    return found


def _normalise(text: str, leniency: Leniency) -> tuple[str, list[int]]:
    """`text` as `leniency` compares it, and each character's index in `text`."""
    chars: list[str] = []
    origin: list[int] = []
    start = 0
    for line in text.split("\n"):
        body = [
            (_PUNCTUATION.get(char, char) if leniency.punctuation else char, start + index)
            for index, char in enumerate(line)
        ]
        low, high = 0, len(body)
        while high > low and body[high - 1][0].isspace():
            high -= 1
        while leniency.leading and low < high and body[low][0].isspace():
            low += 1
        for piece, at in body[low:high]:
            chars.extend(piece)
            origin.extend([at] * len(piece))
        start += len(line) + 1
        chars.append("\n")
        origin.append(start - 1)
    # split() gave one line more than there are newlines.
    chars.pop()
    origin.pop()
    return "".join(chars), origin


def _span(
    text: str, view: str, origin: list[int], at: int, size: int, leniency: Leniency
) -> tuple[int, int]:
    """The match at `view[at : at + size]` in `text`, widened to whole lines where it
    starts or ends one, so the whitespace it ignored is replaced too."""
    start, end = origin[at], origin[at + size - 1] + 1
    stop = at + size
    if view[stop - 1] != "\n" and (stop == len(view) or view[stop] == "\n"):
        line_end = text.find("\n", end)
        end = len(text) if line_end < 0 else line_end
    if leniency.leading and view[at] != "\n" and (at == 0 or view[at - 1] == "\n"):
        start = text.rfind("\n", 0, start) + 1
    return start, end


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(new: str, old_lines: list[str], file_lines: list[str]) -> str:
    """`new` shifted by the indentation the file has and old_string had not
    (or had and the file has not), when that is the same on every line."""
    shifts: set[tuple[bool, str]] = set()
    for old_line, file_line in zip(old_lines, file_lines, strict=False):
        if not old_line.strip() or not file_line.strip():
            continue
        had, has = _indent(old_line), _indent(file_line)
        if has.endswith(had):
            shifts.add((True, has[: len(has) - len(had)]))
        elif had.endswith(has):
            shifts.add((False, had[: len(had) - len(has)]))
        else:
            return new
    if len(shifts) != 1:
        return new
    ((add, shift),) = shifts
    lines = new.split("\n")
    if add:
        return "\n".join(shift + line if line.strip() else line for line in lines)
    return "\n".join(line.removeprefix(shift) for line in lines)
