from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import ToolContext, ToolError, WriteFileTool


async def test_writes_a_new_file_in_new_directories(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    output = await WriteFileTool(sandbox)(
        {"path": "src/pkg/a.py", "content": "x = 1\nprint(x)\n"}, ctx
    )

    assert output.content == "wrote 2 lines (15 bytes) to src/pkg/a.py"
    assert not output.is_error
    assert (tree / "src" / "pkg" / "a.py").read_text() == "x = 1\nprint(x)\n"


async def test_replaces_an_existing_file(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    (tree / "notes.md").write_text("old content that is longer\n")

    output = await WriteFileTool(sandbox)({"path": "notes.md", "content": "é"}, ctx)

    assert output.content == "wrote 1 line (2 bytes) to notes.md"
    assert (tree / "notes.md").read_text() == "é"


async def test_empty_content(sandbox: LocalSandbox, tree: Path, ctx: ToolContext) -> None:
    output = await WriteFileTool(sandbox)({"path": "empty", "content": ""}, ctx)

    assert output.content == "wrote 0 lines (0 bytes) to empty"
    assert (tree / "empty").read_bytes() == b""


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../planted.txt", "../planted.txt is outside the working tree"),
        ("out/planted.txt", "out/planted.txt resolves outside the working tree via a symlink"),
        ("src", "src is a directory"),
    ],
)
async def test_bad_paths_are_tool_errors(
    sandbox: LocalSandbox, tree: Path, tmp_path: Path, ctx: ToolContext, path: str, message: str
) -> None:
    (tree / "src").mkdir()
    (tree / "out").symlink_to(tmp_path / "outside", target_is_directory=True)

    with pytest.raises(ToolError) as raised:
        await WriteFileTool(sandbox)({"path": path, "content": "x"}, ctx)
    assert str(raised.value) == message
    assert not (tmp_path / "planted.txt").exists()
    assert not (tmp_path / "outside" / "planted.txt").exists()


def test_spec(sandbox: LocalSandbox) -> None:
    spec = WriteFileTool(sandbox).spec

    assert spec.name == "write_file"
    assert spec.input_schema["required"] == ["path", "content"]
