"""The Codex patch format: parsing into operations, and hunks applied to text."""

from __future__ import annotations

import pytest

from runner.tools.patch_format import (
    AddFile,
    DeleteFile,
    Hunk,
    PatchError,
    UpdateFile,
    apply_hunks,
    parse,
)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def hunks(*lines: str) -> tuple[Hunk, ...]:
    (op,) = parse(patch("*** Update File: f.py", *lines)).ops
    assert isinstance(op, UpdateFile)
    return op.hunks


def test_parses_every_operation() -> None:
    ops = parse(
        patch(
            "*** Add File: new/a.txt",
            "+one",
            "+",
            "*** Delete File: old.txt",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def greet():",
            "-    print('hi')",
            "+    print('hello')",
            "*** End of File",
        )
    ).ops

    assert ops == (
        AddFile("new/a.txt", "one\n\n"),
        DeleteFile("old.txt"),
        UpdateFile(
            "src/app.py",
            "src/main.py",
            (Hunk(("def greet():",), ("    print('hi')",), ("    print('hello')",), True, 8),),
        ),
    )


def test_parses_several_hunks_and_stacked_headers() -> None:
    parsed = hunks(
        " first",
        "-a",
        "+b",
        "@@ class A",
        "@@     def m(self):",
        "-x",
        "",
        "+y",
        "@@",
        "+tail",
    )

    assert parsed == (
        Hunk((), ("first", "a"), ("first", "b"), False, 3),
        Hunk(("class A", "def m(self):"), ("x", ""), ("", "y"), False, 6),
        Hunk((), (), ("tail",), False, 11),
    )


def test_tolerates_padding_crlf_and_a_heredoc() -> None:
    text = "<<'EOF'\r\n  *** Begin Patch \r\n*** Delete File:  a.txt \r\n*** End Patch  \r\nEOF\r\n"

    assert parse(text).ops == (DeleteFile("a.txt"),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the patch must start with the line '*** Begin Patch'"),
        ("*** Begin Patch\n*** Delete File: a", "the patch must end with the line '*** End Patch'"),
        (patch(), "the patch has no file operation (*** Add/Delete/Update File: path)"),
        (
            patch("*** Frobnicate File: a"),
            "line 2: expected '*** Add File: path', '*** Delete File: path' or"
            " '*** Update File: path', got '*** Frobnicate File: a'",
        ),
        (patch("*** Delete File: "), "line 2: '*** Delete File:' names no path"),
        (patch("*** Update File: a"), "line 2: '*** Update File: a' has no hunk to apply"),
        (
            patch("*** Update File: a", "@@", "~oops"),
            "line 4: a hunk line must start with ' ', '-' or '+', got '~oops'",
        ),
        (patch("*** Update File: a", "@@ ctx"), "line 3: the hunk has no lines"),
        (
            patch("*** Update File: a", "@@", "-x", "*** End of File", "-y"),
            "line 6: expected a hunk starting with '@@', got '-y'",
        ),
    ],
)
def test_every_parse_error_is_one_line_naming_where(text: str, message: str) -> None:
    with pytest.raises(PatchError) as raised:
        parse(text)

    assert str(raised.value) == message
    assert "\n" not in str(raised.value)


FILE = "import os\n\ndef f():\n    return 1\n\ndef g():\n    return 1\n"


@pytest.mark.parametrize(
    ("text", "lines", "expected", "how"),
    [
        pytest.param(
            FILE,
            ["@@", " def f():", "-    return 1", "+    return 2"],
            FILE.replace("f():\n    return 1", "f():\n    return 2"),
            (None,),
            id="exact",
        ),
        pytest.param(
            FILE,
            ["@@ def g():", "-    return 1", "+    return 3"],
            FILE.replace("g():\n    return 1", "g():\n    return 3"),
            (None,),
            id="context header picks the second of two",
        ),
        pytest.param(
            FILE,
            ["@@ g(", "-    return 1", "+    return 3"],
            FILE.replace("g():\n    return 1", "g():\n    return 3"),
            (None,),
            id="a header that is part of a line",
        ),
        pytest.param(
            FILE,
            ["@@", "-    return 1", "+    return 4", "*** End of File"],
            FILE.replace("g():\n    return 1", "g():\n    return 4"),
            (None,),
            id="end of file picks the last",
        ),
        pytest.param(
            FILE,
            ["@@", " import os", "+import re", "@@ def g():", "-    return 1", "+    return 0"],
            FILE.replace("os\n", "os\nimport re\n").replace(
                "g():\n    return 1", "g():\n    return 0"
            ),
            (None, None),
            id="two hunks in order",
        ),
        pytest.param(
            FILE,
            ["@@ def f():", "+    '''F.'''"],
            FILE.replace("f():\n", "f():\n    '''F.'''\n"),
            (None,),
            id="pure addition below the header",
        ),
        pytest.param(
            "a\nb",
            ["@@", "+c"],
            "a\nb\nc\n",
            (None,),
            id="pure addition at the end, the last newline added",
        ),
        pytest.param(
            "x = 1   \ny = 2\n",
            ["@@", "-x = 1", "+x = 9"],
            "x = 9\ny = 2\n",
            ("ignoring trailing whitespace",),
            id="trailing whitespace",
        ),
        pytest.param(
            "class A:\n    def m(self):\n        return 1\n",
            ["@@", " def m(self):", "-    return 1", "+    return 2"],
            "class A:\n    def m(self):\n        return 2\n",
            ("ignoring indentation and trailing whitespace",),
            id="indentation, re-indented",
        ),
        pytest.param(
            "s = \u201chi\u201d\n",
            ["@@", '-s = "hi"', '+s = "ho"'],
            's = "ho"\n',
            (
                "ignoring indentation, trailing whitespace and Unicode punctuation"
                " (curly quotes, dashes, non-breaking spaces, ellipses)",
            ),
            id="unicode punctuation",
        ),
        pytest.param(
            "a\nb\n",
            ["@@", "-b", "+c", ""],
            "a\nc\n",
            (None,),
            id="a blank last line standing for the end",
        ),
        pytest.param(
            "xx = 1\n  x = 1\n",
            ["@@", "-x = 1", "+x = 2"],
            "xx = 1\n  x = 2\n",
            ("ignoring indentation and trailing whitespace",),
            id="whole lines only, never part of one",
        ),
    ],
)
def test_hunks_apply(text: str, lines: list[str], expected: str, how: tuple[str | None]) -> None:
    updated = apply_hunks("f.py", text, hunks(*lines))

    assert updated.text == expected
    assert updated.leniencies == how


@pytest.mark.parametrize(
    ("text", "lines", "message"),
    [
        pytest.param(
            FILE,
            ["@@", "-    return 7", "+    return 8"],
            "f.py: hunk 1 of 1 (patch line 3): the lines to change (' ' and '-') were not"
            " found; the closest text is at line 4 (read_file shows it)",
            id="not found, the nearest named",
        ),
        pytest.param(
            FILE,
            ["@@", "-zzzz qqqq", "+x"],
            "f.py: hunk 1 of 1 (patch line 3): the lines to change (' ' and '-') were not found",
            id="not found, nothing near",
        ),
        pytest.param(
            FILE,
            ["@@ def h():", "-    return 1", "+    return 2"],
            "f.py: hunk 1 of 1 (patch line 3): no line below the hunks before it matches"
            " '@@ def h():'",
            id="header not found",
        ),
        pytest.param(
            FILE,
            ["@@", "-import os", "+import re", "@@", "-import os", "+import sys"],
            "f.py: hunk 2 of 2 (patch line 6): the lines to change (' ' and '-') were not"
            " found; the closest text is at line 1 (read_file shows it)",
            id="a later hunk searches below the one before",
        ),
        pytest.param(
            FILE,
            ["@@", "-import os", "*** End of File"],
            "f.py: hunk 1 of 1 (patch line 3): the lines to change (' ' and '-') were not"
            " found at the end of the file; the closest text is at line 1 (read_file shows it)",
            id="end of file",
        ),
        pytest.param(
            "  a\n  b\n    a\n",
            ["@@", "-a", "+c"],
            "f.py: hunk 1 of 1 (patch line 3): no exact match, and 2 places ignoring"
            " indentation and trailing whitespace; add context lines or an '@@' line to make"
            " it unique",
            id="ambiguous lenient match",
        ),
    ],
)
def test_every_apply_error_is_one_line_naming_file_and_hunk(
    text: str, lines: list[str], message: str
) -> None:
    with pytest.raises(PatchError) as raised:
        apply_hunks("f.py", text, hunks(*lines))

    assert str(raised.value) == message
    assert "\n" not in str(raised.value)


def test_a_failing_hunk_fails_them_all() -> None:
    # The first hunk applies to its own copy; the caller gets an error, not half of it.
    with pytest.raises(PatchError, match="hunk 2 of 2"):
        apply_hunks("f.py", FILE, hunks("@@", "-import os", "+import re", "@@", "-nope", "+x"))
