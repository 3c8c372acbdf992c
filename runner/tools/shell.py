"""shell: run a command as an argv list, the way Codex-trained models call it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Sandbox
from runner.tools.apply_patch import ApplyPatchTool
from runner.tools.base import ToolContext, ToolOutput
from runner.tools.bash import DEFAULT_TIMEOUT, MAX_TIMEOUT, execute
from runner.tools.schema import ToolInput, input_schema, parse

__all__ = ["SPEC", "ShellTool"]

# Runs argv through bash, so a missing program is bash's one line and exit 127
# rather than a sandbox failure; "$@" keeps every argument as it was given.
_EXEC = ["bash", "-c", 'exec "$@"', "shell"]

# The names under which Codex-trained models run a patch from the shell.
_PATCH_COMMANDS = frozenset({"apply_patch", "applypatch"})


class ShellInput(ToolInput):
    command: list[str] = Field(
        min_length=1,
        description=(
            'The program and its arguments, e.g. ["pytest", "-x", "tests"]; for pipes,'
            ' redirections or &&, ["bash", "-lc", "the command line"].'
        ),
    )
    workdir: str | None = Field(
        default=None,
        description=(
            "The directory to run the command in, relative to the repository root"
            " (default: the root). It must exist inside the repository."
        ),
    )
    timeout_ms: int = Field(
        default=int(DEFAULT_TIMEOUT * 1000),
        gt=0,
        le=int(MAX_TIMEOUT * 1000),
        description="Milliseconds before the command and everything it started are killed.",
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command and return at once with its id, for a server or a"
            " watcher: read its output with bash_output, stop it with kill_shell."
            " The timeout does not apply."
        ),
    )

    @field_validator("command", mode="before")
    @classmethod
    def _command_line(cls, value: Any) -> Any:
        # A model sometimes sends the command line as one string: bash runs it.
        return ["bash", "-lc", value] if isinstance(value, str) else value


SPEC = ToolSpec(
    name="shell",
    description=(
        "Run a command at the repository root (or `workdir`) and get its output (stdout"
        " and stderr interleaved) and exit code. `command` is an argv list; use"
        ' ["bash", "-lc", "..."] for shell syntax. Each call starts afresh: cd and'
        " exported variables do not carry over. There is no terminal and no stdin: pass"
        " non-interactive flags and never start an editor or pager. The default timeout"
        " is 120000 ms (at most 600000); on timeout the command and every process it"
        " started are killed. Start a server or watcher with run_in_background and read"
        " it with bash_output. Long output is shortened in the middle, so filter it."
        " Edit files with apply_patch, and search with grep and glob."
    ),
    input_schema=input_schema(ShellInput),
)


class ShellTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._patcher = ApplyPatchTool(sandbox)

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ShellInput, args)
        argv = request.command
        if len(argv) == 2 and argv[0] in _PATCH_COMMANDS:
            # There is no apply_patch program in the sandbox: the tool applies it.
            return await self._patcher.apply(argv[1])
        return await execute(
            self._sandbox,
            [*_EXEC, *argv],
            timeout=request.timeout_ms / 1000,
            workdir=request.workdir,
            background=request.run_in_background,
        )
