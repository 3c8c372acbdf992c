"""bash_output and kill_shell: follow and stop the commands bash started in the background."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import BackgroundOutput, Sandbox, UnknownBackground
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import count_lines
from runner.tools.schema import ToolInput, input_schema, parse


class ShellInput(ToolInput):
    id: str = Field(description="The id bash or shell gave the background command, e.g. bash_1.")


OUTPUT_SPEC = ToolSpec(
    name="bash_output",
    description=(
        "Read what a command started with run_in_background (bash or shell) printed since the"
        " last read (stdout and stderr interleaved), and whether it is still running or"
        " its exit code. Returns at once: call it again later for more."
    ),
    input_schema=input_schema(ShellInput),
)

KILL_SPEC = ToolSpec(
    name="kill_shell",
    description=(
        "Stop a command started with run_in_background (bash or shell), and every process it"
        " started; returns what it printed since the last read. Its id is then gone."
    ),
    input_schema=input_schema(ShellInput),
)


def render(got: BackgroundOutput, status: str) -> ToolOutput:
    """The new output, then the command's status."""
    output = got.output.decode("utf-8", errors="replace")
    if output and not output.endswith("\n"):
        output += "\n"
    if got.dropped:
        output = f"[{got.dropped:,} earlier bytes not kept]\n{output}"
    return ToolOutput(f"{output}{status}", False, len(got.output), count_lines(output))


class BashOutputTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return OUTPUT_SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ShellInput, args)
        try:
            got = await self._sandbox.background_output(request.id)
        except UnknownBackground:
            raise unknown(request.id) from None
        if got.exit_code is None:
            return render(got, f"{request.id} is still running")
        return render(got, f"{request.id} has exited; exit code: {got.exit_code}")


class KillShellTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return KILL_SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ShellInput, args)
        try:
            got = await self._sandbox.stop_background(request.id)
        except UnknownBackground:
            raise unknown(request.id) from None
        return render(got, f"{request.id} stopped; exit code: {got.exit_code}")


def unknown(ident: str) -> ToolError:
    return ToolError(
        f"id: no background command {ident} (ids come from bash with run_in_background;"
        " a stopped one is gone)"
    )
