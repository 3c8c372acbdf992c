"""shell, the OpenAI family's command tool, on the local sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import BashOutputTool, ShellTool, ToolContext, ToolError, ToolOutput
from runner.tools.base import Tool
from tests.runner.tools.conftest import Files


async def shell(sandbox: LocalSandbox, ctx: ToolContext, **args: object) -> ToolOutput:
    tool: Tool = ShellTool(sandbox)
    return await tool(dict(args), ctx)  # type: ignore[arg-type]


async def test_argv_runs_as_given_without_a_shell(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await shell(sandbox, ctx, command=["printf", "%s|", "a b", "$HOME", "*"])

    assert output.content == "a b|$HOME|*|\nexit code: 0"


async def test_bash_lc_gives_shell_syntax(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await shell(sandbox, ctx, command=["bash", "-lc", "echo one && echo two | tr a-z A-Z"])

    assert output.content == "one\nTWO\nexit code: 0"


async def test_a_string_command_runs_with_bash(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await shell(sandbox, ctx, command="echo $((2 + 3))")

    assert output.content == "5\nexit code: 0"


async def test_a_missing_program_is_exit_127(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await shell(sandbox, ctx, command=["no-such-program-here"])

    assert isinstance(output.content, str)
    assert output.content.endswith("exit code: 127")
    assert "no-such-program-here" in output.content


async def test_workdir_runs_inside_the_tree(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"pkg/sub/x.txt": "x\n"})

    output = await shell(sandbox, ctx, command=["pwd"], workdir="pkg/sub")

    assert output.content == f"{tree / 'pkg' / 'sub'}\nexit code: 0"


@pytest.mark.parametrize(
    ("workdir", "message"),
    [
        ("../outside", "workdir: ../outside is outside the working tree"),
        ("nowhere", "workdir: nowhere does not exist"),
        ("file.txt", "workdir: file.txt is not a directory"),
    ],
)
async def test_workdir_is_confined(
    sandbox: LocalSandbox, ctx: ToolContext, files: Files, workdir: str, message: str
) -> None:
    files({"file.txt": "f\n"})

    with pytest.raises(ToolError) as raised:
        await shell(sandbox, ctx, command=["pwd"], workdir=workdir)

    assert str(raised.value) == message


async def test_timeout_ms_kills_the_command(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await shell(sandbox, ctx, command=["sleep", "30"], timeout_ms=200)

    assert output.is_error
    assert output.content == "exit code: -9\ntimed out after 0.2s; the process group was killed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": []}, "invalid input: command: List should have at least 1 item"),
        ({"command": ["ls"], "timeout_ms": 600_001}, "invalid input: timeout_ms:"),
        ({"command": ["ls"], "cwd": "."}, "invalid input: cwd: Extra inputs are not permitted"),
    ],
)
async def test_bad_input_is_one_line(
    sandbox: LocalSandbox, ctx: ToolContext, args: dict[str, object], message: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await shell(sandbox, ctx, **args)

    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


async def test_background_output_is_read_with_bash_output(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    started = await shell(sandbox, ctx, command=["echo", "served"], run_in_background=True)
    assert isinstance(started.content, str)
    ident = started.content.split(" as ", 1)[1].split(":", 1)[0]

    status = ""
    for _ in range(200):
        got = await BashOutputTool(sandbox)({"id": ident}, ctx)
        assert isinstance(got.content, str)
        status += got.content
        if "exit code" in got.content:
            break
        await sandbox.run(["sleep", "0.05"], timeout=5)

    assert "served\n" in status
    assert "exit code: 0" in status


async def test_apply_patch_through_the_shell_edits_the_file(
    sandbox: LocalSandbox, ctx: ToolContext, tree: Path, files: Files
) -> None:
    files({"a.txt": "old\n"})
    text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"

    output = await shell(sandbox, ctx, command=["apply_patch", text])

    assert output.content == "applied the patch:\nM a.txt"
    assert (tree / "a.txt").read_text() == "new\n"
