"""bash's run_in_background with bash_output and kill_shell, on the local sandbox."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from runner.llm.types import JSONObject
from runner.sandbox import LocalSandbox
from runner.tools import BashOutputTool, BashTool, KillShellTool, ToolContext, ToolError
from tests.processes import NAME_LAST, NAME_SELF, Process, until_gone


async def start(sandbox: LocalSandbox, ctx: ToolContext, command: str, **extra: str) -> str:
    args: JSONObject = {"command": command, "run_in_background": True, **extra}
    output = await BashTool(sandbox)(args, ctx)
    assert isinstance(output.content, str)
    found = re.match(r"started in the background as (bash_\d+): ", output.content)
    assert found, output.content
    return found.group(1)


async def read(sandbox: LocalSandbox, ctx: ToolContext, ident: str) -> str:
    output = await BashOutputTool(sandbox)({"id": ident}, ctx)
    assert isinstance(output.content, str)
    return output.content


async def read_until(sandbox: LocalSandbox, ctx: ToolContext, ident: str, want: str) -> str:
    """The output of every bash_output call, and the last one's status line,
    once `want` is in them."""
    seen = ""
    for _ in range(500):
        *lines, status = (await read(sandbox, ctx, ident)).split("\n")
        seen += "".join(f"{line}\n" for line in lines)
        if want in seen + status:
            return seen + status
        await asyncio.sleep(0.01)
    raise AssertionError(f"{ident} never printed {want!r}; saw {seen!r}")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param("echo hi; exit 3", "hi\nbash_1 has exited; exit code: 3", id="exits"),
        pytest.param("printf 'no newline'", "no newline\nbash_1 has exited; exit code: 0", id="nl"),
        pytest.param(
            "echo out; echo err >&2", "out\nerr\nbash_1 has exited; exit code: 0", id="2>"
        ),
        pytest.param("exit 0", "bash_1 has exited; exit code: 0", id="silent"),
    ],
)
async def test_a_background_command_is_read_until_it_exits(
    sandbox: LocalSandbox, ctx: ToolContext, command: str, expected: str
) -> None:
    ident = await start(sandbox, ctx, command)

    assert await read_until(sandbox, ctx, ident, "exit code: " + expected[-1]) == expected
    # Read once: nothing new the second time.
    assert await read(sandbox, ctx, ident) == expected.splitlines()[-1]


async def test_a_server_keeps_running_between_calls_until_killed(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    ident = await start(sandbox, ctx, f"{NAME_SELF} > server.pid; echo listening; sleep 300")
    assert await read_until(sandbox, ctx, ident, "listening") == (
        f"listening\n{ident} is still running"
    )

    # Another command meanwhile: the server is not its to stop.
    done = await BashTool(sandbox)({"command": "cat server.pid"}, ctx)
    name = (tree / "server.pid").read_text()
    assert done.content == f"{name}exit code: 0"
    assert await read(sandbox, ctx, ident) == f"{ident} is still running"
    server = Process.named(name)
    assert server.alive()

    stopped = await KillShellTool(sandbox)({"id": ident}, ctx)

    assert stopped.content == f"{ident} stopped; exit code: -9"
    assert await until_gone(server)


@pytest.mark.parametrize(
    ("tool", "ident"),
    [
        pytest.param(BashOutputTool, "bash_99", id="output-never-started"),
        pytest.param(KillShellTool, "bash_99", id="kill-never-started"),
        pytest.param(BashOutputTool, "../etc", id="output-nonsense"),
    ],
)
async def test_an_unknown_id_is_one_clear_error(
    sandbox: LocalSandbox, ctx: ToolContext, tool: type[BashOutputTool], ident: str
) -> None:
    with pytest.raises(ToolError) as raised:
        await tool(sandbox)({"id": ident}, ctx)

    assert str(raised.value) == (
        f"id: no background command {ident} (ids come from bash with run_in_background;"
        " a stopped one is gone)"
    )


async def test_a_killed_command_is_gone(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    ident = await start(sandbox, ctx, "sleep 300")
    await KillShellTool(sandbox)({"id": ident}, ctx)

    with pytest.raises(ToolError, match=f"no background command {ident}"):
        await KillShellTool(sandbox)({"id": ident}, ctx)


async def test_closing_the_sandbox_stops_background_commands_and_their_children(
    tree: Path, ctx: ToolContext
) -> None:
    sandbox = LocalSandbox(tree)
    await start(sandbox, ctx, f"sleep 300 & {NAME_LAST} > child.pid; {NAME_SELF} > main.pid; wait")
    for _ in range(500):
        if all(
            (tree / name).exists() and (tree / name).read_text().endswith("\n")
            for name in ("child.pid", "main.pid")
        ):
            break
        await asyncio.sleep(0.01)
    processes = [Process.named((tree / name).read_text()) for name in ("child.pid", "main.pid")]
    assert all(process.alive() for process in processes)

    await sandbox.aclose()

    assert [await until_gone(process) for process in processes] == [True, True]


async def test_a_background_command_runs_in_workdir_and_is_refused_outside(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    (tree / "web").mkdir()
    ident = await start(sandbox, ctx, "pwd", workdir="web")
    assert await read_until(sandbox, ctx, ident, "exit code: 0") == (
        f"{tree.resolve() / 'web'}\n{ident} has exited; exit code: 0"
    )

    with pytest.raises(ToolError) as raised:
        await BashTool(sandbox)({"command": "pwd", "run_in_background": True, "workdir": ".."}, ctx)
    assert str(raised.value) == "workdir: .. is outside the working tree"


async def test_endless_output_keeps_the_newest_and_counts_the_rest(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    ident = await start(sandbox, ctx, "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end")
    reads = [await sandbox.background_output(ident)]
    for _ in range(500):
        if reads[-1].exit_code is not None:
            break
        await asyncio.sleep(0.01)
        reads.append(await sandbox.background_output(ident))

    # However the reads fell, what was kept and what was counted add up.
    assert sum(len(got.output) + got.dropped for got in reads) == 3_000_005
    assert sum(got.dropped for got in reads) >= 3_000_005 - len(reads) * 1024 * 1024
    assert b"".join(got.output for got in reads).endswith(b"x\nend\n")
    assert reads[-1].exit_code == 0


def test_a_dropped_head_is_said_first() -> None:
    from runner.sandbox.base import BackgroundOutput
    from runner.tools.background import render

    output = render(BackgroundOutput(b"tail\n", None, dropped=1_234_567), "bash_1 is still running")

    assert output.content == "[1,234,567 earlier bytes not kept]\ntail\nbash_1 is still running"
