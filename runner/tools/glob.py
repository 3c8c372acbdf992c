"""glob: find files by name pattern with ripgrep."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import NOT_GIT, WALK_FLAGS, cap_lines, run_search, search_root
from runner.tools.schema import ToolInput, input_schema, parse

MAX_ENTRIES = 500


class GlobInput(ToolInput):
    pattern: str = Field(min_length=1, description="Glob such as `**/*.py` or `src/*.{ts,tsx}`.")
    path: str = Field(
        default=".", description="Directory to search; the pattern is relative to it."
    )


SPEC = ToolSpec(
    name="glob",
    description=(
        "Find files by path pattern, e.g. `**/*.py`, `tests/**/test_*.py` or"
        " `*.{yml,yaml}`. A pattern without `/` matches file names at any depth; one with"
        " `/` is matched against the path relative to `path`. Lists files only (no"
        " directories), sorted by path, skipping what .gitignore ignores; hidden files"
        f" are included. At most {MAX_ENTRIES} entries are listed. To search file"
        " contents, use grep."
    ),
    input_schema=input_schema(GlobInput),
)


class GlobTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(GlobInput, args)
        root = await search_root(self._sandbox, request.path, files_allowed=False)
        argv = ["rg", "--files", *WALK_FLAGS, f"--glob={request.pattern}", NOT_GIT, root.target]
        result = await run_search(self._sandbox, argv, root)
        output = result.output.decode("utf-8", errors="replace")
        if result.exit_code == 1:
            return ToolOutput("no files match")
        if result.exit_code != 0:
            raise ToolError(output.strip() or f"rg failed with exit code {result.exit_code}")
        lines = [root.shown(line) for line in output.removesuffix("\n").split("\n")]
        return ToolOutput(cap_lines(lines, MAX_ENTRIES, "file", "narrow the pattern or the path"))
