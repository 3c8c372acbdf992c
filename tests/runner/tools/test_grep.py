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


NEEDLES = "one\ntwo\nneedle\nthree\nfour\nfive\nsix\nneedle\nseven\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"context": 1},
            "n.txt-2-two\nn.txt:3:needle\nn.txt-4-three\n--\nn.txt-7-six\nn.txt:8:needle\nn.txt-9-seven",
            id="context",
        ),
        pytest.param(
            {"before_context": 2},
            "n.txt-1-one\nn.txt-2-two\nn.txt:3:needle\n--\nn.txt-6-five\nn.txt-7-six\nn.txt:8:needle",
            id="before",
        ),
        pytest.param(
            {"after_context": 1},
            "n.txt:3:needle\nn.txt-4-three\n--\nn.txt:8:needle\nn.txt-9-seven",
            id="after",
        ),
        pytest.param(
            # Adjacent groups merge, as in grep.
            {"context": 2, "before_context": 0, "after_context": 1},
            "n.txt-1-one\nn.txt-2-two\nn.txt:3:needle\nn.txt-4-three\n--\n"
            "n.txt-6-five\nn.txt-7-six\nn.txt:8:needle\nn.txt-9-seven",
            id="after-wins-over-context",
        ),
        pytest.param(
            {"context": 1, "head_limit": 4},
            "n.txt-2-two\nn.txt:3:needle\nn.txt-4-three\n--\n"
            "(3 more lines not shown; continue with offset=4 or narrow the search)",
            id="context-paged",
        ),
    ],
)
async def test_context_lines(
    sandbox: LocalSandbox, files: Files, ctx: ToolContext, args: dict[str, int], expected: str
) -> None:
    files({"n.txt": NEEDLES})

    output = await grep(sandbox, ctx, pattern="needle", path="n.txt", output_mode="content", **args)

    assert output == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            # As a regex, `()` is an empty group and every `alpha` would match.
            {"pattern": "alpha()", "fixed_strings": True, "output_mode": "content"},
            "src/a.py:1:def alpha():\nsrc/b.py:2:    return alpha()",
            id="fixed-strings",
        ),
        pytest.param(
            {"pattern": "a.*(", "fixed_strings": True},
            "no matches",
            id="fixed-strings-no-regex-error",
        ),
        pytest.param(
            {"pattern": "alpha\\(\\):\\n    return 1", "multiline": True, "output_mode": "content"},
            "src/a.py:1:def alpha():\nsrc/a.py:2:    return 1",
            id="multiline-newline",
        ),
        pytest.param(
            {"pattern": "beta.*alpha", "multiline": True, "output_mode": "content"},
            "src/b.py:1:def beta():\nsrc/b.py:2:    return alpha()",
            id="multiline-dot-matches-newline",
        ),
        pytest.param(
            {"pattern": "alpha", "type": "py"},
            "src/a.py\nsrc/b.py\nsrc/sub/c.py",
            id="type-py",
        ),
        pytest.param(
            {"pattern": "alpha", "type": "yaml"},
            ".github/workflows/ci.yml",
            id="type-yaml",
        ),
        pytest.param(
            {"pattern": "alpha", "type": "py", "glob": "sub/*"},
            "src/sub/c.py",
            id="type-and-glob",
        ),
    ],
)
async def test_matching_options(
    sandbox: LocalSandbox, ctx: ToolContext, args: dict[str, str | bool], expected: str
) -> None:
    assert await grep(sandbox, ctx, path="src" if "glob" in args else ".", **args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"head_limit": 1},
            ".github/workflows/ci.yml\n"
            "(3 more files not shown; continue with offset=1 or narrow the search)",
            id="first-page",
        ),
        pytest.param(
            {"offset": 1, "head_limit": 2},
            "src/a.py\nsrc/b.py\n"
            "(1 more file not shown; continue with offset=3 or narrow the search)",
            id="middle-page",
        ),
        pytest.param({"offset": 3, "head_limit": 2}, "src/sub/c.py", id="last-page"),
        pytest.param(
            {"output_mode": "count", "offset": 2},
            "src/b.py:1\nsrc/sub/c.py:1",
            id="count-mode",
        ),
    ],
)
async def test_paging(
    sandbox: LocalSandbox, ctx: ToolContext, args: dict[str, str | int], expected: str
) -> None:
    assert await grep(sandbox, ctx, pattern="alpha", **args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"offset": 4}, "offset 4 is past the end of the results (4 files)", id="offset-past-end"
        ),
        pytest.param({"context": 2}, "context needs output_mode=content", id="context-files-mode"),
        pytest.param(
            {"after_context": 1, "output_mode": "count"},
            "after_context needs output_mode=content",
            id="after-context-count-mode",
        ),
        pytest.param({"type": "cobolx"}, "rg: unrecognized file type: cobolx", id="unknown-type"),
        pytest.param(
            {"head_limit": 0},
            "invalid input: head_limit: Input should be greater than or equal to 1",
            id="head-limit-zero",
        ),
    ],
)
async def test_bad_options_are_one_line_errors(
    sandbox: LocalSandbox, ctx: ToolContext, args: dict[str, str | int], message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await GrepTool(sandbox)({"pattern": "alpha", **args}, ctx)

    assert str(raised.value) == message


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
