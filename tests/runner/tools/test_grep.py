from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import GrepTool, ToolContext, ToolError
from tests.runner.tools.conftest import Files


@pytest.fixture(autouse=True)
def project(files: Files, tree: Path, tmp_path: Path) -> None:
    files(
        {
            "src/a.py": "def alpha():\n    return 1\n",
            "src/b.py": "def beta():\n    return alpha()\n",
            "src/sub/c.py": "ALPHA = alpha\n",
            "docs/readme.md": "Alpha and beta\n",
            ".github/workflows/ci.yml": "run: alpha\n",
            ".gitignore": "build/\n",
            "build/gen.py": "alpha = 1\n",
            ".git/hooks/alpha.py": "alpha = 1\n",
            "flags.txt": "use -v for verbose\n",
        }
    )
    # ripgrep does not follow symlinks it meets while walking the tree.
    (tree / "out").symlink_to(tmp_path / "outside", target_is_directory=True)


async def grep(sandbox: LocalSandbox, ctx: ToolContext, **args: str | int | bool) -> str:
    output = await GrepTool(sandbox)(dict(args), ctx)
    assert not output.is_error
    assert isinstance(output.content, str)
    return output.content


async def test_lists_matching_files_sorted_by_path(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await grep(sandbox, ctx, pattern="alpha") == (
        ".github/workflows/ci.yml\nsrc/a.py\nsrc/b.py\nsrc/sub/c.py"
    )


async def test_case_insensitive(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await grep(sandbox, ctx, pattern="^alpha", case_insensitive=True) == (
        "docs/readme.md\nsrc/sub/c.py"
    )


async def test_content_mode_shows_numbered_lines(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await grep(sandbox, ctx, pattern=r"alpha\(", output_mode="content")

    assert output == "src/a.py:1:def alpha():\nsrc/b.py:2:    return alpha()"


async def test_count_mode_in_a_directory(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await grep(sandbox, ctx, pattern="alpha|beta", path="src", output_mode="count")

    assert output == "src/a.py:1\nsrc/b.py:2\nsrc/sub/c.py:1"


async def test_a_single_file(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await grep(sandbox, ctx, pattern="alpha", path="src/b.py", output_mode="content")

    assert output == "src/b.py:2:    return alpha()"


async def test_absolute_path_inside_the_tree(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    output = await grep(sandbox, ctx, pattern="alpha", path=str(tree / "src" / "sub"))

    assert output == "src/sub/c.py"


async def test_glob_filter(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await grep(sandbox, ctx, pattern="alpha", glob="*.yml") == ".github/workflows/ci.yml"
    # A glob with a slash is relative to the searched directory.
    assert await grep(sandbox, ctx, pattern="alpha", path="src", glob="sub/*.py") == (
        "src/sub/c.py"
    )


async def test_pattern_starting_with_a_dash(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await grep(sandbox, ctx, pattern="-v", output_mode="content")

    assert output == "flags.txt:1:use -v for verbose"


async def test_a_form_feed_in_a_line_is_no_line_break(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext
) -> None:
    files({"page.txt": "gamma\fdelta\n"})

    output = await grep(sandbox, ctx, pattern="gamma", output_mode="content")

    assert output == "page.txt:1:gamma\fdelta"


async def test_no_matches(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await grep(sandbox, ctx, pattern="gamma") == "no matches"


async def test_max_results_caps_and_says_how_many_were_left_out(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    output = await grep(sandbox, ctx, pattern="alpha", max_results=1)

    assert output == (
        ".github/workflows/ci.yml\n(3 more files not shown; narrow the search or raise max_results)"
    )


async def test_bad_regex_is_an_error_with_rgs_message(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as raised:
        await GrepTool(sandbox)({"pattern": "alpha("}, ctx)

    assert str(raised.value).startswith("rg: regex parse error:")
    assert "unclosed group" in str(raised.value)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("..", ".. is outside the working tree"),
        ("../outside", "../outside is outside the working tree"),
        ("out", "out resolves outside the working tree via a symlink"),
        ("out/secret.txt", "out/secret.txt resolves outside the working tree via a symlink"),
        ("missing", "missing does not exist"),
    ],
)
async def test_bad_paths_are_tool_errors(
    sandbox: LocalSandbox, ctx: ToolContext, path: str, message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await GrepTool(sandbox)({"pattern": "alpha", "path": path}, ctx)

    assert str(raised.value) == message


def test_spec(sandbox: LocalSandbox) -> None:
    spec = GrepTool(sandbox).spec

    assert spec.name == "grep"
    assert spec.input_schema["required"] == ["pattern"]
    properties = spec.input_schema["properties"]
    assert isinstance(properties, dict)
    assert properties["output_mode"] == {
        "default": "files_with_matches",
        "description": (
            "files_with_matches: paths of matching files; content: matching lines as"
            " path:line:text; count: path:number of matching lines."
        ),
        "enum": ["files_with_matches", "content", "count"],
        "type": "string",
    }
