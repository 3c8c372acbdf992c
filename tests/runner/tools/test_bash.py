from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.agent.capping import cap_text
from runner.sandbox import LocalSandbox
from runner.tools import BashTool, ToolContext, ToolError, ToolOutput
from tests.processes import NAME_LAST, Process, until_gone


async def bash(
    sandbox: LocalSandbox, ctx: ToolContext, command: str, **extra: float | str
) -> ToolOutput:
    return await BashTool(sandbox)({"command": command, **extra}, ctx)


async def test_output_then_exit_code(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await bash(sandbox, ctx, "echo hello")

    assert output == ToolOutput("hello\nexit code: 0", total_bytes=6, total_lines=1)


async def test_stdout_and_stderr_keep_their_order(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await bash(sandbox, ctx, "echo out1; echo err1 >&2; echo out2; echo err2 >&2")

    assert output.content == "out1\nerr1\nout2\nerr2\nexit code: 0"


async def test_nonzero_exit_is_information_not_an_error(
    sandbox: LocalSandbox, ctx: ToolContext
) -> None:
    output = await bash(sandbox, ctx, "printf 'no newline'; exit 3")

    assert output == ToolOutput(
        "no newline\nexit code: 3", is_error=False, total_bytes=10, total_lines=1
    )


async def test_no_output(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    assert await bash(sandbox, ctx, "true") == ToolOutput(
        "exit code: 0", total_bytes=0, total_lines=0
    )


async def test_runs_at_the_repository_root(sandbox: LocalSandbox, ctx: ToolContext) -> None:
    output = await bash(sandbox, ctx, "pwd")

    assert output.content == f"{sandbox.root}\nexit code: 0"


@pytest.mark.parametrize(
    ("workdir", "shown"),
    [
        pytest.param("src", "src", id="relative"),
        pytest.param("src/pkg/", "src/pkg", id="trailing-slash"),
        pytest.param("src/../src/pkg", "src/pkg", id="dot-dot-inside"),
        pytest.param(".", "", id="the-root"),
        pytest.param("in-link", "src", id="symlink-inside"),
    ],
)
async def test_workdir_runs_the_command_there(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext, workdir: str, shown: str
) -> None:
    (tree / "src" / "pkg").mkdir(parents=True)
    (tree / "in-link").symlink_to("src")

    output = await bash(sandbox, ctx, "pwd", workdir=workdir)

    assert output.content == f"{os.path.join(sandbox.root, shown).rstrip('/')}\nexit code: 0"


@pytest.mark.parametrize(
    ("workdir", "error"),
    [
        pytest.param("../outside", "workdir: ../outside is outside the working tree", id="up"),
        pytest.param("/etc", "workdir: /etc is outside the working tree", id="absolute"),
        pytest.param(
            "out-link",
            "workdir: out-link resolves outside the working tree via a symlink",
            id="symlink-out",
        ),
        pytest.param("missing", "workdir: missing does not exist", id="missing"),
        pytest.param("notes.txt", "workdir: notes.txt is not a directory", id="a-file"),
    ],
)
async def test_workdir_outside_the_tree_or_missing_is_refused_in_one_line(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext, workdir: str, error: str
) -> None:
    (tree / "notes.txt").write_text("x\n")
    (tree / "out-link").symlink_to(tree.parent / "outside")

    with pytest.raises(ToolError) as raised:
        await bash(sandbox, ctx, "touch ran", workdir=workdir)

    assert str(raised.value) == error
    assert not (tree / "ran").exists()
    assert not (tree.parent / "outside" / "ran").exists()


async def test_timeout_kills_the_process_group_and_is_an_error(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext
) -> None:
    command = (
        # The child's output goes elsewhere, so only the group kill can reach it.
        f"sleep 300 > /dev/null 2>&1 & {NAME_LAST} > child.pid; echo started; sleep 300"
    )

    output = await bash(sandbox, ctx, command, timeout=0.5)

    assert output == ToolOutput(
        "started\nexit code: -9\ntimed out after 0.5s; the process group was killed",
        is_error=True,
        total_bytes=8,
        total_lines=1,
    )
    # Read after the kill: known by what it ran.
    child = Process.named((tree / "child.pid").read_text(), ["sleep", "300"])
    assert await until_gone(child)


HINT = " (start servers and watchers with run_in_background)"


@pytest.mark.parametrize(
    ("command", "ending"),
    [
        pytest.param(
            "sleep 300 & echo done",
            "stopped 1 background process left running with the command's output: sleep 300",
            id="one",
        ),
        pytest.param(
            "sleep 301 & sleep 302 & echo done",
            "stopped 2 background processes left running with the command's output:"
            " sleep 301; sleep 302",
            id="two",
        ),
        pytest.param(
            "for i in $(seq 12); do sleep 300 & done; echo done",
            "stopped 12 background processes left running with the command's output: "
            + "; ".join(["sleep 300"] * 10)
            + "; and 2 more",
            id="many",
        ),
    ],
)
async def test_background_processes_stopped_at_the_end_are_named(
    sandbox: LocalSandbox, ctx: ToolContext, command: str, ending: str
) -> None:
    output = await bash(sandbox, ctx, command)

    assert output.content == f"done\n{ending}{HINT}\nexit code: 0"
    assert not output.is_error


async def test_secrets_are_not_in_the_environment(
    sandbox: LocalSandbox, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-do-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs-do-not-leak")
    monkeypatch.setenv("NEO_GITHUB_PRIVATE_KEY", "pem-do-not-leak")
    monkeypatch.setenv("BUILD_FLAVOR", "visible")

    output = await bash(sandbox, ctx, "env")

    assert isinstance(output.content, str)
    assert "BUILD_FLAVOR=visible" in output.content.splitlines()
    assert "do-not-leak" not in output.content


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("PYTHONDONTWRITEBYTECODE", "1", id="no-bytecode"),
        pytest.param("PAGER", "cat", id="pager"),
        pytest.param("GIT_PAGER", "cat", id="git-pager"),
        pytest.param("PIP_PROGRESS_BAR", "off", id="pip-progress"),
        pytest.param("TQDM_DISABLE", "1", id="tqdm"),
        pytest.param("CI", "1", id="ci"),
    ],
)
async def test_commands_get_the_quiet_environment_whatever_the_hosts(
    sandbox: LocalSandbox,
    ctx: ToolContext,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
) -> None:
    # The service's own environment (a developer's shell) must not bring a pager back.
    monkeypatch.setenv(name, "less")
    script = f'import os;print(os.environ.get("{name}"))'

    output = await bash(sandbox, ctx, f"python3 -c '{script}'")

    assert output.content == f"{value}\nexit code: 0"


async def test_python_writes_no_bytecode_into_the_tree(
    sandbox: LocalSandbox, tree: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    (tree / "calc.py").write_text("ADD = 1\n")

    output = await bash(sandbox, ctx, "python3 -c 'import calc'; ls -A")

    assert output.content == "calc.py\nexit code: 0"


def test_spec(sandbox: LocalSandbox) -> None:
    spec = BashTool(sandbox).spec

    assert spec.name == "bash"
    assert spec.input_schema["properties"] == {
        "command": {"description": "The command line, run with `bash -c`.", "type": "string"},
        "timeout": {
            "default": 120.0,
            "description": "Seconds before the command and everything it started are killed.",
            "exclusiveMinimum": 0,
            "maximum": 600.0,
            "type": "number",
        },
        "workdir": {
            "description": (
                "The directory to run the command in, relative to the repository root"
                " (default: the root). It must exist inside the repository."
            ),
            "type": "string",
        },
        "run_in_background": {
            "default": False,
            "description": (
                "Start the command and return at once with its id, for a server or a"
                " watcher: read its output with bash_output, stop it with kill_shell."
                " The timeout does not apply."
            ),
            "type": "boolean",
        },
    }


def test_an_excerpt_from_the_sandbox_keeps_the_full_size() -> None:
    from runner.sandbox.base import ExecResult
    from runner.tools.bash import render

    output = render(ExecResult(0, b"head\ntail\n", total_bytes=1000, total_lines=100), 120)

    assert output.content == "head\ntail\nexit code: 0"
    assert (output.total_bytes, output.total_lines) == (1000, 100)


@pytest.mark.parametrize(
    ("command", "size", "lines", "ending"),
    [
        pytest.param(
            "head -c 5000000 /dev/zero | tr '\\0' x", 5_000_000, 1, "exit code: 0", id="one-line"
        ),
        pytest.param(
            "yes 123456789 | head -c 5000000", 5_000_000, 500_000, "exit code: 0", id="lines"
        ),
        pytest.param(
            "yes 123456789 | head -c 5000003", 5_000_003, 500_001, "exit code: 0", id="partial-last"
        ),
        pytest.param(
            "yes 123456789 | head -c 5000000; exit 7",
            5_000_000,
            500_000,
            "exit code: 7",
            id="exit-7",
        ),
        # Past the sandbox's own bound: it keeps head and tail and counts the rest.
        pytest.param(
            "yes 123456789 | head -c 20000000", 20_000_000, 2_000_000, "exit code: 0", id="dropped"
        ),
    ],
)
async def test_the_cap_marker_gives_the_commands_own_size(
    sandbox: LocalSandbox, ctx: ToolContext, command: str, size: int, lines: int, ending: str
) -> None:
    output = await bash(sandbox, ctx, command)
    assert isinstance(output.content, str)

    capped = cap_text(
        output.content, total_bytes=output.total_bytes, total_lines=output.total_lines
    )

    # The exit code line bash adds is not the command's output.
    assert f"[... output truncated: {size:,} bytes in {lines:,} lines in total;" in capped
    assert capped.endswith(f"\n{ending}")
