from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import GlobTool, ToolContext, ToolError
from tests.runner.tools.conftest import Files


@pytest.fixture(autouse=True)
def project(files: Files, tree: Path, tmp_path: Path) -> None:
    files(
        {
            "src/a.py": "",
            "src/b.py": "",
            "src/sub/c.py": "",
            "src/notes.md": "",
            ".github/workflows/ci.yml": "",
            ".gitignore": "build/\n",
            "build/gen.py": "",
            ".git/hooks/hook.py": "",
        }
    )
    (tree / "out").symlink_to(tmp_path / "outside", target_is_directory=True)


async def glob(sandbox: LocalSandbox, ctx: ToolContext, **args: str) -> str:
    output = await GlobTool(sandbox)(dict(args), ctx)
    assert not output.is_error
    assert isinstance(output.content, str)
    return output.content


async def test_matches_at_any_depth_sorted_skipping_ignored_files(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    assert await glob(sandbox, ctx, pattern="**/*.py") == "src/a.py\nsrc/b.py\nsrc/sub/c.py"


async def test_hidden_files_are_included(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await glob(sandbox, ctx, pattern="*.yml") == ".github/workflows/ci.yml"


async def test_pattern_is_relative_to_path(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await glob(sandbox, ctx, pattern="sub/*.py", path="src") == "src/sub/c.py"
    assert await glob(sandbox, ctx, pattern="*.{md,yml}", path="src") == "src/notes.md"


async def test_no_files_match(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await glob(sandbox, ctx, pattern="**/*.rs") == "no files match"


async def test_caps_at_500_entries(sandbox: LocalSandbox, files: Files, ctx: ToolContext) -> None:
    files({f"many/{n:03}.txt": "" for n in range(503)})

    output = await glob(sandbox, ctx, pattern="*.txt", path="many")

    lines = output.splitlines()
    assert len(lines) == 501
    assert lines[0] == "many/000.txt"
    assert lines[499] == "many/499.txt"
    assert lines[500] == "(3 more files not shown; narrow the pattern or the path)"


async def test_bad_glob_is_an_error(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as raised:
        await GlobTool(sandbox)({"pattern": "[a"}, ctx)

    assert "error parsing glob '[a'" in str(raised.value)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("..", ".. is outside the working tree"),
        ("out", "out resolves outside the working tree via a symlink"),
        ("missing", "missing does not exist"),
        ("src/a.py", "src/a.py is a file, not a directory"),
    ],
)
async def test_bad_paths_are_tool_errors(
    sandbox: LocalSandbox, ctx: ToolContext, path: str, message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await GlobTool(sandbox)({"pattern": "*", "path": path}, ctx)

    assert str(raised.value) == message


def test_spec(sandbox: LocalSandbox) -> None:
    spec = GlobTool(sandbox).spec

    assert spec.name == "glob"
    assert spec.input_schema["required"] == ["pattern"]
