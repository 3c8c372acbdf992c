"""bash: run a shell command in the repository."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import ExecResult, PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import count_lines
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0


class BashInput(ToolInput):
    command: str = Field(description="The command line, run with `bash -c`.")
    timeout: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds before the command and everything it started are killed.",
    )
    workdir: str | None = Field(
        default=None,
        description=(
            "The directory to run the command in, relative to the repository root"
            " (default: the root). It must exist inside the repository."
        ),
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command and return at once with its id, for a server or a"
            " watcher: read its output with bash_output, stop it with kill_shell."
            " The timeout does not apply."
        ),
    )


SPEC = ToolSpec(
    name="bash",
    description=(
        "Run a bash command at the repository root (or `workdir`) and get its output (stdout and"
        " stderr interleaved) and exit code. Each call starts a fresh shell: cd,"
        " exported variables and activated environments do not carry over, so chain"
        " steps with && in one command. There is no terminal and no stdin: pass"
        " non-interactive flags (-y, --no-pager) and never start an editor or pager."
        " The default timeout is 120 seconds (at most 600); on timeout the command and"
        " every process it started are killed. Start a server or watcher with"
        " run_in_background and read it with bash_output: a process left running with"
        " `&` that still holds the command's output is stopped when the command ends."
        " `workdir` runs the command in a directory of the repository. Long output is"
        " shortened in the"
        " middle, so filter it (grep, tail, head). Prefer read_file, grep and glob to"
        " cat, grep and find."
    ),
    input_schema=input_schema(BashInput),
)


def render(result: ExecResult, timeout: float) -> ToolOutput:
    """The command's output, then how it ended."""
    text = result.output.decode("utf-8", errors="replace")
    # The cap's marker gives the command's own size (the full one when the
    # sandbox kept only head and tail), not counting the lines added here.
    total_bytes = len(result.output) if result.total_bytes is None else result.total_bytes
    total_lines = count_lines(text) if result.total_lines is None else result.total_lines
    if text and not text.endswith("\n"):
        text += "\n"
    # The exit code (and a timeout) stay the last lines: the report reads them there.
    if result.stopped_count:
        text += _stopped_line(result.stopped_count, result.stopped) + "\n"
    ended = f"{text}exit code: {result.exit_code}"
    if result.timed_out:
        ended += f"\ntimed out after {timeout:g}s; the process group was killed"
    # A failing command is information (a red test, a missing file), not a tool error.
    return ToolOutput(ended, result.timed_out, total_bytes, total_lines)


def _stopped_line(count: int, names: tuple[str, ...]) -> str:
    processes = "process" if count == 1 else "processes"
    shown = "; ".join(names)
    if count > len(names):
        shown += f"; and {count - len(names)} more"
    return (
        f"stopped {count} background {processes} left running with the command's"
        f" output: {shown} (start servers and watchers with run_in_background)"
    )


class BashTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(BashInput, args)
        return await execute(
            self._sandbox,
            ["bash", "-c", request.command],
            timeout=request.timeout,
            workdir=request.workdir,
            background=request.run_in_background,
        )


async def execute(
    sandbox: Sandbox,
    argv: list[str],
    *,
    timeout: float,
    workdir: str | None,
    background: bool,
) -> ToolOutput:
    """Run `argv` in `sandbox` as bash does (and shell, for the OpenAI family's tools)."""
    try:
        if background:
            ident = await sandbox.start_background(argv, cwd=workdir)
            return ToolOutput(started(ident))
        result = await sandbox.run(argv, timeout=timeout, cwd=workdir)
    except (PathOutsideTree, FileNotFoundError, NotADirectoryError) as error:
        # Only the working directory is checked before the command starts.
        if workdir is None:
            raise
        raise workdir_error(workdir, error) from None
    return render(result, timeout)


def started(ident: str) -> str:
    return (
        f"started in the background as {ident}: read its output with bash_output and"
        f' stop it with kill_shell, with {{"id": "{ident}"}}. It is stopped when the run ends.'
    )


def workdir_error(workdir: str, error: Exception) -> ToolError:
    """Why `workdir` cannot be the command's directory, in one line naming the field."""
    if isinstance(error, PathOutsideTree):
        return ToolError(f"workdir: {error}")
    if isinstance(error, FileNotFoundError):
        return ToolError(f"workdir: {workdir} does not exist")
    return ToolError(f"workdir: {workdir} is not a directory")
