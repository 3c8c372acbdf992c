"""`inert_closing_keywords`, from a table: no closing keyword Neo did not mean survives."""

from __future__ import annotations

import re

import pytest

from runner.closing import inert_closing_keywords

# GitHub's grammar, written apart from the module's: a keyword, maybe a colon,
# whitespace, then a reference (emphasis markers around the keyword allowed).
GITHUB_CLOSES = re.compile(
    r"(?<![a-z0-9])(close[sd]?|fix(e[sd])?|resolve[sd]?)[*_~`]*:?[*_~`]*\s+[*_~`]*"
    r"(#\d|gh-\d|[\w.-]+/[\w.-]+#\d|https?://)",
    re.IGNORECASE,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixes #1 crash on start", "Fixes issue #1 crash on start"),
        ("fix #12", "fix issue #12"),
        ("Neo: CLOSES #3 (#12)", "Neo: CLOSES issue #3 (#12)"),
        ("Resolved: #4", "Resolved: issue #4"),
        ("closed\t#5", "closed\tissue #5"),
        ("Fixes octo/hello#6", "Fixes issue octo/hello#6"),
        ("Fixes GH-7", "Fixes issue GH-7"),
        (
            "resolves https://github.com/o/r/issues/8",
            "resolves issue https://github.com/o/r/issues/8",
        ),
        ("_Fixes_ #9", "_Fixes_ issue #9"),
        ("**Fixes:** #10", "**Fixes:** issue #10"),
        ("fixes `#11`", "fixes `issue #11`"),
        ("Fixes #1 and closes #2", "Fixes issue #1 and closes issue #2"),
        ("line one\nFixes #3", "line one\nFixes issue #3"),
        # Markdown as GitHub shows it: a space written as a reference, a backslash.
        ("Closes&nbsp;#8", "Closes&nbsp;issue #8"),
        ("Fixes&#32;GH-9", "Fixes&#32;issue GH-9"),
        ("fixes&#xA0;&Tab;#10", "fixes&#xA0;&Tab;issue #10"),
        ("Fixes\\: #11", "Fixes\\: issue #11"),
        ("fixes\\\n#12", "fixes\\\nissue #12"),
        # Not a closing keyword, left alone.
        ("Prefixes #1 of the log", "Prefixes #1 of the log"),
        ("Fixes issue #1", "Fixes issue #1"),
        ("Fix the date test (#12)", "Fix the date test (#12)"),
        ("Fixed in 1.2", "Fixed in 1.2"),
        ("fixes#1", "fixes#1"),
        ("Fixes &amp; #1", "Fixes &amp; #1"),
        ("fixes&#35;1", "fixes&#35;1"),
        ("", ""),
    ],
)
def test_closing_keywords_become_inert(text: str, expected: str) -> None:
    assert inert_closing_keywords(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Fixes #1 crash",
        "fix: #2",
        "**Resolves** octo/hello#3",
        "closes https://github.com/o/r/issues/4",
        "_fixed_: GH-5",
        "Close #1, close #2, close #3",
    ],
)
def test_no_closing_reference_survives_and_the_result_is_stable(text: str) -> None:
    once = inert_closing_keywords(text)
    assert GITHUB_CLOSES.search(once) is None, once
    assert inert_closing_keywords(once) == once
