"""Finding old_string: exact, lenient and nearest matches, on the text itself."""

from __future__ import annotations

import pytest

from runner.tools.matching import find, nearest


def replaced(text: str, old: str, new: str) -> str:
    found = find(text, old, new)
    assert len(found.spans) == 1
    ((start, end),) = found.spans
    return text[:start] + found.replacement + text[end:]


@pytest.mark.parametrize(
    ("text", "old", "new", "edited"),
    [
        pytest.param("foo  \nbar\n", "foo \n", "baz\n", "baz\nbar\n", id="match-ends-with-newline"),
        pytest.param("foo  \nbar", "foo", "baz", "baz  \nbar", id="exact-part-of-a-line"),
        pytest.param("a\n  b  \n  c\n", "b\nc", "B\nC", "a\n  B\n  C\n", id="reindent-whole-lines"),
        pytest.param("x = f(\u2018a\u2019)\n", "f('a')", "g()", "x = g()\n", id="inside-a-line"),
        pytest.param("\n\n  x  \n", "x", "y", "\n\n  y  \n", id="exact-first"),
        pytest.param("\n\n  x\u2026  \n", "x...", "y", "\n\n  y\n", id="ellipsis-widened"),
    ],
)
def test_find(text: str, old: str, new: str, edited: str) -> None:
    assert replaced(text, old, new) == edited


@pytest.mark.parametrize(
    ("text", "old", "lines"),
    [
        pytest.param("alpha\nbeta\ngamma\n", "betta", (2, 2), id="one-line"),
        pytest.param("a\nb\nc\nd\n", "b\nx\nd", (2, 4), id="window"),
        pytest.param("alpha\nbeta\n", "zzzzzzzz", None, id="nothing-alike"),
        pytest.param("one\ntwo\n", "one\ntwo\nthree", (1, 2), id="longer-than-the-file"),
    ],
)
def test_nearest(text: str, old: str, lines: tuple[int, int] | None) -> None:
    assert nearest(text, old) == lines
