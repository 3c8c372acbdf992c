from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.sandbox.base import Lines
from runner.tools import ReadFileTool, ToolContext, ToolError
from runner.tools.paging import page
from tests.runner.tools.conftest import Files


async def read(sandbox: LocalSandbox, ctx: ToolContext, **args: str | int) -> str:
    output = await ReadFileTool(sandbox)(dict(args), ctx)
    assert not output.is_error
    assert isinstance(output.content, str)
    return output.content


async def test_lines_are_numbered_like_cat_n(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"a.py": "import os\n\nprint(os.sep)\n"})

    assert await read(sandbox, ctx, path="a.py") == (
        "     1\timport os\n     2\t\n     3\tprint(os.sep)"
    )


async def test_last_line_without_newline_and_crlf_endings(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"win.txt": b"one\r\ntwo"})

    assert await read(sandbox, ctx, path="win.txt") == "     1\tone\n     2\ttwo"


async def test_offset_and_limit_show_a_window_and_where_to_go_on(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"five.txt": "".join(f"line {n}\n" for n in range(1, 6))})

    middle = await read(sandbox, ctx, path="five.txt", offset=2, limit=2)
    tail = await read(sandbox, ctx, path="five.txt", offset=4)

    assert middle == (
        "     2\tline 2\n     3\tline 3\n"
        "(lines 2–3 of 5 (35 bytes); continue with offset=4, or grep for the part you need)"
    )
    assert tail == "     4\tline 4\n     5\tline 5\n(lines 4–5 of 5 (35 bytes))"


async def test_default_limit_is_2000_lines(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"long.txt": "x\n" * 2500})

    output = await read(sandbox, ctx, path="long.txt")

    lines = output.splitlines()
    assert len(lines) == 2001
    assert lines[-2] == "  2000\tx"
    assert lines[-1] == (
        "(lines 1–2,000 of 2,500 (5.0 KB); continue with offset=2001,"
        " or grep for the part you need)"
    )


async def test_offset_past_the_end_names_the_line_count(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"five.txt": "a\nb\nc\nd\ne\n"})

    with pytest.raises(ToolError, match=r"^offset 6 is past the end of five.txt \(5 lines\)$"):
        await ReadFileTool(sandbox)({"path": "five.txt", "offset": 6}, ctx)


async def test_long_lines_are_cut_with_a_marker(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"min.js": "y" * 2500 + "\nshort\n"})

    output = await read(sandbox, ctx, path="min.js")

    assert output == (
        f"     1\t{'y' * 2000}… [line 1 cut at character 2,000 of 2,500; the rest:"
        " offset=1, column=2001]\n     2\tshort"
    )


async def test_empty_file_says_so(sandbox: LocalSandbox, files: Files, ctx: ToolContext) -> None:
    files({"empty.txt": ""})

    assert await read(sandbox, ctx, path="empty.txt") == "empty.txt is empty"


@pytest.mark.parametrize(
    "data", [b"\x89PNG\r\n\x1a\n\x00\x00", b"caf\xe9 latin-1\n"], ids=["nul", "not-utf8"]
)
async def test_binary_files_are_refused_with_their_size(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext, data: bytes
) -> None:
    files({"blob": data})

    with pytest.raises(ToolError) as raised:
        await ReadFileTool(sandbox)({"path": "blob"}, ctx)
    assert str(raised.value) == (
        f"blob is a binary file ({len(data)} bytes); read_file shows text files only"
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.py", "missing.py does not exist"),
        ("src", "src is a directory"),
        ("../outside/secret.txt", "../outside/secret.txt is outside the working tree"),
        ("leak.txt", "leak.txt resolves outside the working tree via a symlink"),
        ("out/secret.txt", "out/secret.txt resolves outside the working tree via a symlink"),
    ],
)
async def test_bad_paths_are_tool_errors(
    sandbox: LocalSandbox, tree: Path, tmp_path: Path, ctx: ToolContext, path: str, message: str
) -> None:
    (tree / "src").mkdir()
    (tree / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (tree / "out").symlink_to(tmp_path / "outside", target_is_directory=True)

    with pytest.raises(ToolError) as raised:
        await ReadFileTool(sandbox)({"path": path}, ctx)
    assert str(raised.value) == message


async def test_absolute_path_elsewhere_is_a_tool_error(
    sandbox: LocalSandbox, tmp_path: Path, ctx: ToolContext
) -> None:
    target = str(tmp_path / "outside" / "secret.txt")

    with pytest.raises(ToolError) as raised:
        await ReadFileTool(sandbox)({"path": target}, ctx)
    assert str(raised.value) == f"{target} is outside the working tree"


def test_spec(sandbox: LocalSandbox) -> None:
    spec = ReadFileTool(sandbox).spec

    assert spec.name == "read_file"
    assert spec.input_schema["required"] == ["path"]
    assert spec.input_schema["additionalProperties"] is False


async def test_a_line_longer_than_what_is_kept_keeps_its_length_and_whole_characters(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"wide.txt": "é" * 9000 + "\nend\n"})

    output = await read(sandbox, ctx, path="wide.txt")

    assert output == (
        f"     1\t{'é' * 2000}… [line 1 cut at character 2,000 of 9,000; the rest:"
        " offset=1, column=2001]\n     2\tend"
    )


async def test_non_utf8_in_the_window_is_binary_even_far_into_the_file(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"late.txt": b"fine\n" * 5000 + b"caf\xe9\n"})

    with pytest.raises(ToolError, match=r"^late.txt is a binary file \(25005 bytes\)"):
        await ReadFileTool(sandbox)({"path": "late.txt", "offset": 4999}, ctx)
    assert "  4999\tfine" in await read(sandbox, ctx, path="late.txt", offset=4999, limit=2)


def test_a_file_longer_than_what_is_counted_says_at_least() -> None:
    window = Lines((b"a", b"b"), (1, 1), 7, complete=False, size=10**12)

    assert page("huge", window, ["a", "b"], offset=3, column=1, cap=4096) == (
        "     3\ta\n     4\tb\n(lines 3–4 of at least 7 (1,000 GB); continue with offset=5,"
        " or grep for the part you need)"
    )
    with pytest.raises(ToolError, match=r"^offset 9 is past the first 7 lines of huge, as far"):
        page("huge", Lines((), (), 7, complete=False, size=10**12), [], offset=9, column=1, cap=99)
