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

    assert confirmation == "replaced 1 occurrence in src/a.py (first at line 5)"
    assert source.read_text() == SOURCE.replace("def g():\n    return 1", "def g():\n    return 2")


async def test_no_match_is_an_error(sandbox: LocalSandbox, source: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "src/a.py", "old_string": "return 3", "new_string": "return 4"}, ctx
        )

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

    assert confirmation == "replaced 3 occurrences in src/a.py (first at line 2)"
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


async def test_crlf_mismatch_gets_a_hint(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    (tree / "win.txt").write_bytes(b"one\r\ntwo\r\n")

    with pytest.raises(ToolError) as raised:
        await EditFileTool(sandbox)(
            {"path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, ctx
        )

    assert str(raised.value) == (
        "no match for old_string in win.txt (the file has CRLF line endings:"
        " use \\r\\n in old_string and new_string)"
    )


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
    assert spec.input_schema["required"] == ["path", "old_string", "new_string"]


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
