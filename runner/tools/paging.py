"""Pages of a text file's numbered lines, each within the loop's output cap. Pure.

A page holds whole lines only, as many as fit the cap, and ends with where to
go on. A line too long to show whole (over `MAX_LINE_CHARS`, or over the page)
is cut, and the cut says where its rest starts (`offset=N, column=M`): every
character of a file can be reached, and nothing shown is cut again by the loop.
read_file and the skill reader (runner/skills/reading.py) both page here.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.sandbox.base import Lines
from runner.tools.base import ToolError
from runner.tools.files import plural

__all__ = ["MAX_LINE_CHARS", "human_size", "page"]

# A line longer than this is cut in a page of many lines: a minified file's
# line would otherwise fill the page.
MAX_LINE_CHARS = 2000
# Room kept for the last line of the page, and for the mark of a cut line.
_FOOTER_ROOM = 200
_MARK_ROOM = 128
# A page is never smaller than this, however small the cap: it must show something.
_MIN_ROOM = 256


def page(
    path: str, window: Lines, texts: Sequence[str], *, offset: int, column: int, cap: int
) -> str:
    """The lines of `window` (from line `offset`, its characters from `column`) as
    one page of at most `cap` UTF-8 bytes, with where to go on.

    `texts` are the window's lines decoded: each the start of its line, as much
    of it as the reader kept (`window.chars` holds the lines' full lengths).
    """
    total = window.total_lines
    if total == 0 and window.complete:
        return f"{path} is empty"
    if not texts:
        if window.complete:
            raise ToolError(f"offset {offset} is past the end of {path} ({plural(total, 'line')})")
        raise ToolError(
            f"offset {offset} is past the first {plural(total, 'line')} of {path}, as far as"
            " read_file counts; read on with a shell command (sed -n)"
        )
    first_chars = window.chars[0]
    if column > 1 and column > first_chars:
        raise ToolError(
            f"column {column} is past the end of line {offset} of {path}"
            f" ({plural(first_chars, 'character')})"
        )
    room = max(cap - _FOOTER_ROOM, _MIN_ROOM)
    rows: list[str] = []
    used = 0
    # Where the page's reader goes on, (line, column); None once all is shown.
    resume: tuple[int, int] | None = None
    for index, (text, chars) in enumerate(zip(texts, window.chars, strict=True)):
        number = offset + index
        start = column if index == 0 else 1
        if start > 1 and len(text) < start:
            # The reader kept less of the line than where the page starts.
            raise ToolError(
                f"line {number} of {path} is too long for read_file to reach character"
                f" {start:,}; read that part with a shell command (cut -c{start}-)"
            )
        # A long line is cut at MAX_LINE_CHARS, unless the page starts in it:
        # then its rest is shown as far as the page holds it.
        most = chars if start > 1 else MAX_LINE_CHARS
        end = min(chars, start - 1 + most, len(text))
        row = _row(number, text, start, end, chars)
        size = len(row.encode("utf-8", "surrogatepass")) + 1
        if used + size > room:
            if rows:
                resume = (number, start)
                break
            # Not even this line fits: show the part that does.
            end = _fit(text, start, end, room - len(f"{number:>6}\t") - _MARK_ROOM)
            row = _row(number, text, start, end, chars)
        rows.append(row)
        used += size
        if end < chars and (used >= room or index == len(texts) - 1):
            # The page ends in this line: the next one starts at its rest.
            resume = (number, end + 1)
            break
    last = offset + len(rows) - 1
    if resume is None and (last < total or not window.complete):
        resume = (last + 1, 1)
    body = "\n".join(rows)
    whole = offset == 1 and column == 1 and last == total and window.complete
    if whole and resume is None:
        return body
    return f"{body}\n{_footer(window, offset, column, last, resume)}"


def _row(number: int, text: str, start: int, end: int, chars: int) -> str:
    """Line `number`'s characters `start`..`end` (1-based), marked when the line goes on."""
    shown = text[start - 1 : end]
    if end < chars:
        shown += (
            f"… [line {number} cut at character {end:,} of {chars:,}; the rest:"
            f" offset={number}, column={end + 1}]"
        )
    return f"{number:>6}\t{shown}"


def _fit(text: str, start: int, end: int, room: int) -> int:
    """The last character (1-based) of `text[start - 1:end]` whose bytes fit `room`."""
    room = max(room, 16)
    data = text[start - 1 : end].encode("utf-8", "surrogatepass")[:room]
    kept = data.decode("utf-8", "ignore")
    return max(start, start - 1 + len(kept))


def _footer(
    window: Lines, offset: int, column: int, last: int, resume: tuple[int, int] | None
) -> str:
    of = f"{window.total_lines:,}" if window.complete else f"at least {window.total_lines:,}"
    lines = f"line {offset:,}" if last == offset else f"lines {offset:,}–{last:,}"
    where = f"{lines} of {of} ({human_size(window.size)})"
    if column > 1:
        where += f", starting at character {column:,}" + (f" of line {offset:,}" * (last > offset))
    if resume is None:
        return f"({where})"
    line, at = resume
    if at > 1:
        return f"({where}; continue with offset={line}, column={at})"
    return f"({where}; continue with offset={line}, or grep for the part you need)"


def human_size(size: int) -> str:
    """`size` bytes as a person reads it: 820 bytes, 106 KB, 2.4 MB."""
    if size < 1000:
        return plural(size, "byte")
    for unit, scale in (("KB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        value = size / scale
        if value < 999.5 or unit == "GB":
            return f"{value:.1f} {unit}" if value < 9.95 else f"{value:,.0f} {unit}"
    raise AssertionError("unreachable")
