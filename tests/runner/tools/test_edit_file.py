from __future__ import annotations

import stat
from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import EditFileTool, ToolContext, ToolError
from runner.tools.edit_file import MAX_EDIT_BYTES

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n\n\ndef h():\n    return 1\n"


@pytest.fixture
def source(tree: Path) -> Path:
    path = tree / "src" / "a.py"
    path.parent.mkdir()
    path.write_text(SOURCE)
    return path


async def edit(sandbox: LocalSandbox, ctx: ToolContext, **args: str | bool) -> str:
    output = await EditFileTool(sandbox)(dict(args), ctx)
    assert not output.is_error
    assert isinstance(output.content, str)
    return output.content


async def test_replaces_a_unique_match(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    confirmation = await edit(
        sandbox,
        ctx,
        path="src/a.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )

    assert confirmation == (
        "replaced 1 occurrence in src/a.py (first at line 5)\n"
        "     2\t    return 1\n     3\t\n     4\t\n     5\tdef g():\n     6\t    return 2\n"
        "     7\t\n     8\t\n     9\tdef h():"
    )
    assert source.read_text() == SOURCE.replace("def g():\n    return 1", "def g():\n    return 2")


async def test_no_match_is_an_error(sandbox: LocalSandbox, source: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "src/a.py", "old_string": "import zebra", "new_string": "return 4"}, ctx
        )

    # Nothing in the file is like it, so no text is named.
    assert str(raised.value) == "no match for old_string in src/a.py"
    assert source.read_text() == SOURCE


async def test_several_matches_without_replace_all_is_an_error(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "src/a.py", "old_string": "return 1", "new_string": "return 0"}, ctx
        )

    assert str(raised.value) == (
        "old_string matches 3 places in src/a.py;"
        " add surrounding context to make it unique or set replace_all"
    )
    assert source.read_text() == SOURCE


async def test_replace_all_replaces_every_match(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    confirmation = await edit(
        sandbox,
        ctx,
        path="src/a.py",
        old_string="return 1",
        new_string="return 0",
        replace_all=True,
    )

    assert confirmation == "replaced 3 occurrences in src/a.py (first at line 2)\n" + "\n".join(
        f"{number:>6}\t{line}" for number, line in enumerate(SOURCE.split("\n")[:10], start=1)
    ).replace("return 1", "return 0")
    assert source.read_text() == SOURCE.replace("return 1", "return 0")


async def test_same_old_and_new_string_is_an_error(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "src/a.py", "old_string": "def f", "new_string": "def f"}, ctx
        )

    assert str(raised.value) == "old_string and new_string are the same; nothing to change"


async def test_empty_old_string_is_an_error(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)({"path": "src/a.py", "old_string": "", "new_string": "x"}, ctx)

    assert str(raised.value) == "old_string is empty; to create or rewrite a file use write_file"


async def test_keeps_the_file_mode(sandbox: LocalSandbox, tree: Path, ctx: ToolContext) -> None:
    script = tree / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)

    await edit(sandbox, ctx, path="run.sh", old_string="old", new_string="new")

    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.py", "missing.py does not exist; create it with write_file"),
        ("src", "src is a directory"),
        ("image.png", "image.png is a binary file; edit_file changes text files only"),
        ("../outside/secret.txt", "../outside/secret.txt is outside the working tree"),
        ("leak.txt", "leak.txt resolves outside the working tree via a symlink"),
    ],
)
async def test_bad_paths_are_tool_errors(
    sandbox: LocalSandbox,
    tree: Path,
    tmp_path: Path,
    source: Path,
    ctx: ToolContext,
    path: str,
    message: str,
) -> None:
    (tree / "image.png").write_bytes(b"\x89PNG\x00\x00alpha")
    (tree / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")

    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)({"path": path, "old_string": "alpha", "new_string": "b"}, ctx)
    assert str(raised.value) == message
    assert (tmp_path / "outside" / "secret.txt").read_text() == "alpha secret\n"


def test_spec(sandbox: LocalSandbox) -> None:
    spec = EditFileTool(sandbox).spec

    assert spec.name == "edit_file"
    # Either old_string and new_string or edits: checked in code, as the API
    # refuses a top-level oneOf.
    assert spec.input_schema["required"] == ["path"]
    properties = spec.input_schema["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == ["path", "old_string", "new_string", "replace_all", "edits"]
    edits = properties["edits"]
    assert isinstance(edits, dict)
    assert edits["minItems"] == 1
    items = edits["items"]
    assert isinstance(items, dict)
    assert items["required"] == ["old_string", "new_string"]


TRAILING = "ignoring trailing whitespace"
INDENTATION = "ignoring indentation and trailing whitespace"
PUNCTUATION = (
    "ignoring indentation, trailing whitespace and Unicode punctuation"
    " (curly quotes, dashes, non-breaking spaces, ellipses)"
)


@pytest.mark.parametrize(
    ("content", "old", "new", "edited", "leniency", "line"),
    [
        pytest.param(
            "x = 1   \ny = 2\n",
            "x = 1\ny = 2",
            "x = 10\ny = 20",
            "x = 10\ny = 20\n",
            TRAILING,
            1,
            id="trailing-whitespace-in-the-file",
        ),
        pytest.param(
            "x = 1\ny = 2\n",
            "x = 1  \ny = 2\n",
            "x = 3\n",
            "x = 3\n",
            TRAILING,
            1,
            id="trailing-whitespace-in-old-string",
        ),
        pytest.param(
            "class A:\n    def f(self):\n        return 1\n",
            "def f(self):\n    return 1",
            "def f(self):\n    return 2",
            "class A:\n    def f(self):\n        return 2\n",
            INDENTATION,
            2,
            id="indentation-missing-is-added-to-new-string",
        ),
        pytest.param(
            "def f():\n    return 1\n",
            "      return 1",
            "      return 2\n      # two",
            "def f():\n    return 2\n    # two\n",
            INDENTATION,
            2,
            id="indentation-extra-is-removed-from-new-string",
        ),
        pytest.param(
            "print(\u201chello\u201d)\n",
            'print("hello")',
            'print("bye")',
            'print("bye")\n',
            PUNCTUATION,
            1,
            id="curly-double-quotes",
        ),
        pytest.param(
            "msg = \u201cit\u2019s fine\u201d  # note\n",
            'msg = "it\'s fine"',
            'msg = "ok"',
            'msg = "ok"  # note\n',
            PUNCTUATION,
            1,
            id="curly-quotes-in-part-of-a-line",
        ),
        pytest.param(
            "# a \u2013 b \u2014 c\n",
            "# a - b - c",
            "# a to c",
            "# a to c\n",
            PUNCTUATION,
            1,
            id="en-and-em-dashes",
        ),
        pytest.param(
            "x =\u00a01\n", "x = 1", "x = 2", "x = 2\n", PUNCTUATION, 1, id="non-breaking-space"
        ),
        pytest.param("wait\u2026\n", "wait...", "done", "done\n", PUNCTUATION, 1, id="ellipsis"),
        pytest.param(
            "\tif x:\n\t    y()  \n",
            "if x:\n    y()",
            "if x:\n    z()",
            "\tif x:\n\t    z()\n",
            INDENTATION,
            1,
            id="tab-indentation-kept",
        ),
    ],
)
async def test_lenient_matches_apply_a_unique_match_and_say_so(
    sandbox: LocalSandbox,
    tree: Path,
    ctx: ToolContext,
    content: str,
    old: str,
    new: str,
    edited: str,
    leniency: str,
    line: int,
) -> None:
    (tree / "f.py").write_text(content)

    confirmation = await edit(sandbox, ctx, path="f.py", old_string=old, new_string=new)

    assert (tree / "f.py").read_text() == edited
    assert confirmation.split("\n", 1)[0] == (
        f"replaced 1 occurrence in f.py (first at line {line}; old_string matched {leniency})"
    )


async def test_a_lenient_match_must_be_unique_even_with_replace_all(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    content = "x = \u201ca\u201d\ny = \u201ca\u201d\n"
    (tree / "f.py").write_text(content)

    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "f.py", "old_string": '"a"', "new_string": "'b'", "replace_all": True}, ctx
        )

    assert str(raised.value) == (
        f"no exact match for old_string in f.py, and 2 places {PUNCTUATION};"
        " copy the text exactly or add surrounding context to make it unique"
    )
    assert (tree / "f.py").read_text() == content


@pytest.mark.parametrize(
    ("old", "message"),
    [
        pytest.param(
            "return 3",
            "no match for old_string in src/a.py; the closest text is at line 2:\n"
            "     2\t    return 1",
            id="one-line",
        ),
        pytest.param(
            "def g():\n    return 7\n",
            "no match for old_string in src/a.py; the closest text is at lines 5-6:\n"
            "     5\tdef g():\n     6\t    return 1",
            id="several-lines",
        ),
        pytest.param(
            "def hh():\n  retrun 1",
            "no match for old_string in src/a.py; the closest text is at lines 9-10:\n"
            "     9\tdef h():\n    10\t    return 1",
            id="typos",
        ),
    ],
)
async def test_no_match_names_the_closest_text(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext, old: str, message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)({"path": "src/a.py", "old_string": old, "new_string": "x"}, ctx)

    assert str(raised.value) == message
    assert source.read_text() == SOURCE


@pytest.mark.parametrize(
    ("content", "old", "new", "edited"),
    [
        pytest.param(
            b"one\r\ntwo\r\nthree\r\n",
            "one\ntwo",
            "1\n2\n2.5",
            b"1\r\n2\r\n2.5\r\nthree\r\n",
            id="crlf-file-lf-strings",
        ),
        pytest.param(
            b"one\r\ntwo\r\nthree\r\n",
            "one\r\ntwo",
            "1\r\n2",
            b"1\r\n2\r\nthree\r\n",
            id="crlf-file-crlf-strings",
        ),
        pytest.param(b"a\r\nb", "b", "c\nd", b"a\r\nc\r\nd", id="crlf-file-no-final-newline"),
        pytest.param(
            b"one\r\ntwo\nthree\r\n",
            "two\nthree",
            "2\n3",
            b"one\r\n2\n3\r\n",
            id="mixed-endings-kept",
        ),
    ],
)
async def test_line_endings_stay_the_files(
    sandbox: LocalSandbox,
    tree: Path,
    ctx: ToolContext,
    content: bytes,
    old: str,
    new: str,
    edited: bytes,
) -> None:
    (tree / "win.txt").write_bytes(content)

    confirmation = await edit(sandbox, ctx, path="win.txt", old_string=old, new_string=new)

    assert (tree / "win.txt").read_bytes() == edited
    # The whole (short) file is shown, numbered, without its \r.
    lines = edited.decode().replace("\r\n", "\n").removesuffix("\n").split("\n")
    assert confirmation.split("\n", 1)[1] == "\n".join(
        f"{n:>6}\t{line}" for n, line in enumerate(lines, start=1)
    )


def numbered(text: str, first: int, last: int) -> str:
    lines = text.split("\n")
    return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(first, last + 1))


async def test_several_edits_apply_in_order_and_show_every_edited_region(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext
) -> None:
    edits = [
        {"old_string": "def f():", "new_string": "def f0():\n    pass\n\n\ndef f():"},
        # Sees what the first edit wrote.
        {"old_string": "def f0():\n    pass", "new_string": "def f0():\n    return 0"},
        {"old_string": "def h():\n  return 1", "new_string": "def h():\n    return 3"},
    ]

    confirmation = await edit(sandbox, ctx, path="src/a.py", edits=edits)  # type: ignore[arg-type]

    expected = "def f0():\n    return 0\n\n\n" + SOURCE.replace(
        "def h():\n    return 1", "def h():\n    return 3"
    )
    assert source.read_text() == expected
    assert confirmation == (
        "applied 3 edits to src/a.py:\n"
        "edit 1: replaced 1 occurrence (first at line 1)\n"
        "edit 2: replaced 1 occurrence (first at line 1)\n"
        f"edit 3: replaced 1 occurrence (first at line 13; old_string matched {INDENTATION})\n"
        # Three lines around each; a gap of one line is shown, not marked.
        f"{numbered(expected, 1, 14)}"
    )


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        pytest.param(
            [
                {"old_string": "def f():", "new_string": "def f1():"},
                {"old_string": "import zebra", "new_string": "x"},
            ],
            "edit 2 of 2 failed, so none was applied: no match for old_string in src/a.py",
            id="second-not-found",
        ),
        pytest.param(
            [
                {"old_string": "def g", "new_string": "def g1"},
                {"old_string": "return 1", "new_string": "return 2"},
            ],
            "edit 2 of 2 failed, so none was applied: old_string matches 3 places in src/a.py;"
            " add surrounding context to make it unique or set replace_all",
            id="second-ambiguous",
        ),
        pytest.param(
            [
                {"old_string": "def f():", "new_string": "def f1():"},
                # The first edit took it away.
                {"old_string": "def f():\n    return 1", "new_string": "def f():\n    return 2"},
            ],
            "edit 2 of 2 failed, so none was applied: no match for old_string in src/a.py;"
            " the closest text is at lines 1-2:\n     1\tdef f1():\n     2\t    return 1",
            id="first-changed-what-the-second-wanted",
        ),
        pytest.param(
            [
                {"old_string": "return 1", "new_string": "return 2", "replace_all": True},
                {"old_string": "def h", "new_string": "def h"},
            ],
            "edit 2 of 2 failed, so none was applied:"
            " old_string and new_string are the same; nothing to change",
            id="second-no-op",
        ),
    ],
)
async def test_several_edits_are_all_or_nothing(
    sandbox: LocalSandbox,
    source: Path,
    ctx: ToolContext,
    edits: list[dict[str, str | bool]],
    message: str,
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)({"path": "src/a.py", "edits": edits}, ctx)  # type: ignore[dict-item]

    assert str(raised.value) == message
    assert source.read_text() == SOURCE


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({}, "invalid input: old_string: Field required (or give edits)", id="neither"),
        pytest.param(
            {"new_string": "x"},
            "invalid input: old_string: Field required (or give edits)",
            id="new-string-alone",
        ),
        pytest.param(
            {
                "old_string": "a",
                "new_string": "b",
                "edits": [{"old_string": "c", "new_string": "d"}],
            },
            "invalid input: give edits or old_string/new_string/replace_all, not both",
            id="both-forms",
        ),
        pytest.param(
            {"replace_all": True, "edits": [{"old_string": "c", "new_string": "d"}]},
            "invalid input: give edits or old_string/new_string/replace_all, not both",
            id="replace-all-beside-edits",
        ),
        pytest.param(
            {"edits": []},
            "invalid input: edits: List should have at least 1 item after validation, not 0",
            id="no-edits",
        ),
        pytest.param(
            {"edits": [{"old_string": "c"}]},
            "invalid input: edits.0.new_string: Field required",
            id="edit-without-new-string",
        ),
    ],
)
async def test_the_two_forms_are_checked_with_one_clear_error(
    sandbox: LocalSandbox, source: Path, ctx: ToolContext, args: dict[str, object], message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)({"path": "src/a.py", **args}, ctx)  # type: ignore[dict-item]

    assert str(raised.value) == message
    assert source.read_text() == SOURCE


@pytest.mark.parametrize(
    ("content", "old", "new", "replace_all", "shown"),
    [
        pytest.param(
            "".join(f"line {n}\n" for n in range(1, 31)),
            "line 15\n",
            "",
            False,
            # The line now at the deletion, with three before and after it.
            "\n".join(f"{n:>6}\tline {n if n < 15 else n + 1}" for n in range(12, 19)),
            id="deleted-line",
        ),
        pytest.param(
            "".join(f"line {n}\n" for n in range(1, 31)),
            "line 3\n",
            "line three\n",
            False,
            "\n".join(f"{n:>6}\t{'line three' if n == 3 else f'line {n}'}" for n in range(1, 7)),
            id="near-the-top",
        ),
        pytest.param(
            "".join(f"{'hit' if n in (2, 20) else 'line'} {n}\n" for n in range(1, 31)),
            "hit",
            "HIT",
            True,
            "\n".join(f"{n:>6}\t{'HIT' if n == 2 else 'line'} {n}" for n in range(1, 6))
            + "\n...\n"
            + "\n".join(f"{n:>6}\t{'HIT' if n == 20 else 'line'} {n}" for n in range(17, 24)),
            id="distant-occurrences",
        ),
        pytest.param("only\n", "only\n", "", False, "(the file is now empty)", id="emptied"),
    ],
)
async def test_the_confirmation_shows_the_edited_lines_numbered(
    sandbox: LocalSandbox,
    tree: Path,
    ctx: ToolContext,
    content: str,
    old: str,
    new: str,
    replace_all: bool,
    shown: str,
) -> None:
    (tree / "f.txt").write_text(content)

    confirmation = await edit(
        sandbox, ctx, path="f.txt", old_string=old, new_string=new, replace_all=replace_all
    )

    assert confirmation.split("\n", 1)[1] == shown


@pytest.mark.parametrize("size", [MAX_EDIT_BYTES, MAX_EDIT_BYTES + 1])
async def test_a_file_over_the_ceiling_is_left_to_bash(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext, size: int
) -> None:
    big = tree / "big.txt"
    big.write_bytes(b"old\n" + b"x" * (size - 4))

    if size == MAX_EDIT_BYTES:
        assert "replaced 1 occurrence" in await edit(
            sandbox, ctx, path="big.txt", old_string="old", new_string="new"
        )
        return
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "big.txt", "old_string": "old", "new_string": "new"}, ctx
        )
    assert str(raised.value) == (
        "big.txt is larger than 16 MiB, more than edit_file changes;"
        " edit it with bash (e.g. sed -i)"
    )
    with big.open("rb") as handle:
        assert handle.read(4) == b"old\n"
