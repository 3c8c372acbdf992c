"""apply_patch on the local sandbox: every operation, confinement, all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import ApplyPatchTool, ToolContext, ToolError, ToolOutput
from tests.runner.tools.conftest import Files


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


async def apply(sandbox: LocalSandbox, ctx: ToolContext, *lines: str) -> ToolOutput:
    return await ApplyPatchTool(sandbox)({"input": patch(*lines)}, ctx)


def snapshot(tree: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(tree)): path.read_bytes() for path in tree.rglob("*") if path.is_file()
    }


async def test_add_delete_update_and_move_in_one_patch(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"old.txt": "bye\n", "src/app.py": "def greet():\n    print('hi')\n", "keep": "k\n"})

    output = await apply(
        sandbox,
        ctx,
        "*** Add File: docs/new.md",
        "+# New",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def greet():",
        "-    print('hi')",
        "+    print('hello')",
    )

    assert output == ToolOutput(
        "applied the patch:\nA docs/new.md\nD old.txt\nM src/app.py -> src/main.py"
    )
    assert snapshot(tree) == {
        "docs/new.md": b"# New\n",
        "src/main.py": b"def greet():\n    print('hello')\n",
        "keep": b"k\n",
    }


async def test_says_how_a_hunk_matched_leniently(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"a.py": "x = 1   \n"})

    output = await apply(sandbox, ctx, "*** Update File: a.py", "@@", "-x = 1", "+x = 2")

    assert output.content == (
        "applied the patch:\nM a.py; hunk 1 matched ignoring trailing whitespace"
    )
    assert (tree / "a.py").read_text() == "x = 2\n"


async def test_crlf_files_stay_crlf(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"w.txt": b"one\r\ntwo\r\n"})

    await apply(sandbox, ctx, "*** Update File: w.txt", "@@", " one", "-two", "+three")

    assert (tree / "w.txt").read_bytes() == b"one\r\nthree\r\n"


async def test_operations_see_the_ones_before_them(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path
) -> None:
    await apply(
        sandbox,
        ctx,
        "*** Add File: a.txt",
        "+one",
        "*** Update File: a.txt",
        "@@",
        "-one",
        "+two",
    )

    assert snapshot(tree) == {"a.txt": b"two\n"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        pytest.param(
            ["*** Add File: fine.txt", "+x", "*** Update File: a.py", "@@", "-nope", "+y"],
            "a.py: hunk 1 of 1 (patch line 5): the lines to change (' ' and '-') were not"
            " found; nothing was changed",
            id="a later hunk fails",
        ),
        pytest.param(
            ["*** Delete File: a.py", "*** Delete File: missing.txt"],
            "missing.txt does not exist; nothing was changed",
            id="deleting a missing file",
        ),
        pytest.param(
            ["*** Update File: missing.py", "@@", "+x"],
            "missing.py does not exist; nothing was changed",
            id="updating a missing file",
        ),
        pytest.param(
            ["*** Add File: fine.txt", "+x", "*** Add File: ../outside/evil.txt", "+x"],
            "../outside/evil.txt is outside the working tree; nothing was changed",
            id="adding outside the tree",
        ),
        pytest.param(
            ["*** Delete File: ../outside/secret.txt"],
            "../outside/secret.txt is outside the working tree; nothing was changed",
            id="deleting outside the tree",
        ),
        pytest.param(
            ["*** Update File: a.py", "*** Move to: /etc/evil", "@@", "-a = 1", "+a = 2"],
            "/etc/evil is outside the working tree; nothing was changed",
            id="moving outside the tree",
        ),
        pytest.param(
            ["*** Delete File: dir"],
            "dir is a directory; nothing was changed",
            id="deleting a directory",
        ),
        pytest.param(
            ["*** Update File: bin.dat", "@@", "+x"],
            "bin.dat is a binary file; apply_patch changes text files only",
            id="a binary file",
        ),
        pytest.param(
            ["*** Nonsense"],
            "invalid patch: line 2: expected '*** Add File: path', '*** Delete File: path'"
            " or '*** Update File: path', got '*** Nonsense'",
            id="a bad patch",
        ),
    ],
)
async def test_a_failure_is_one_line_and_changes_nothing(
    sandbox: LocalSandbox,
    ctx: ToolContext,
    tree: Path,
    files: Files,
    lines: list[str],
    message: str,
) -> None:
    files({"a.py": "a = 1\n", "dir/inner.txt": "i\n", "bin.dat": b"\0\1\2"})
    before = snapshot(tree)

    with pytest.raises(ToolError) as raised:
        await apply(sandbox, ctx, *lines)

    assert str(raised.value) == message
    assert snapshot(tree) == before
    assert (tree.parent / "outside" / "secret.txt").read_text() == "alpha secret\n"
    assert not (tree.parent / "outside" / "evil.txt").exists()


class FullDisk(LocalSandbox):
    """The local sandbox, with a disk that is full for one path."""

    def __init__(self, tree: Path, full: str) -> None:
        super().__init__(tree)
        self._full = full

    async def write(self, path: str, data: bytes) -> None:
        if path == self._full:
            raise OSError(28, "No space left on device")
        await super().write(path, data)


async def test_a_failed_write_puts_back_what_was_written(
    ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "g\n"})
    before = snapshot(tree)

    with pytest.raises(ToolError) as raised:
        await ApplyPatchTool(FullDisk(tree, "b.txt"))(
            {
                "input": patch(
                    "*** Add File: new.txt",
                    "+n",
                    "*** Update File: a.txt",
                    "@@",
                    "-a",
                    "+A",
                    "*** Delete File: gone.txt",
                    "*** Update File: b.txt",
                    "@@",
                    "-b",
                    "+B",
                )
            },
            ctx,
        )

    assert str(raised.value) == (
        "b.txt: No space left on device; the files changed before it were put back"
    )
    assert snapshot(tree) == before


async def test_unknown_fields_are_refused(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="invalid input: patch: Extra inputs are not permitted"):
        await ApplyPatchTool(sandbox)({"input": patch(), "patch": "x"}, ctx)
