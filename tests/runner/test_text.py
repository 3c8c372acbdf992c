"""`one_line`, from a table: the one rule every caller shows text by."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.text import one_line

LONG = "word " * 100


@pytest.mark.parametrize(
    ("what", "limit", "expected"),
    [
        ("plain", 300, "plain"),
        ("  padded\t", 300, "padded"),
        ("first line\nsecond line", 300, "first line second line"),
        ("tabs\t\tand\r\nbreaks\n\n", 300, "tabs and breaks"),
        ("", 300, ""),
        (" \n ", 300, ""),
        ("exactly10!", 10, "exactly10!"),
        ("eleven char", 10, "eleven ch…"),
        # A cut that lands after a space drops it before the ellipsis.
        ("abcd efgh", 6, "abcd…"),
        (LONG, 300, ("word " * 60).strip() + "…"),
        (LONG, None, LONG.strip()),
        (ValueError("bad\n  value"), 300, "bad value"),
        (TimeoutError(), 300, "TimeoutError"),
        (ConfigError(" "), 300, "ConfigError"),
        (KeyError("name"), 300, "'name'"),
    ],
)
def test_one_line(what: BaseException | str, limit: int | None, expected: str) -> None:
    assert one_line(what, limit) == expected


@pytest.mark.parametrize("limit", [1, 2, 5, 80, 300])
def test_one_line_never_exceeds_its_limit(limit: int) -> None:
    assert len(one_line(LONG, limit)) <= limit


def test_the_default_limit_is_300() -> None:
    assert one_line("x" * 301) == "x" * 299 + "…"
    assert one_line("x" * 300) == "x" * 300
