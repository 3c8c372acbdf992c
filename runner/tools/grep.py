"""grep: search file contents with ripgrep."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import (
    NOT_GIT,
    WALK_FLAGS,
    SearchRoot,
    cap_lines,
    run_search,
    search_root,
)
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_MAX_RESULTS = 200
# Minified files have lines of megabytes; a match on one is shown shortened.
MAX_COLUMNS = 500

OutputMode = Literal["files_with_matches", "content", "count"]

# What each output mode asks ripgrep for; every mode prints the path first.
_MODE_FLAGS: dict[str, tuple[str, ...]] = {
    "files_with_matches": ("--files-with-matches",),
    "content": (
        "--line-number",
        "--with-filename",
        "--no-heading",
        f"--max-columns={MAX_COLUMNS}",
        "--max-columns-preview",
    ),
    "count": ("--count", "--with-filename"),
}
_UNITS = {"files_with_matches": "file", "content": "line", "count": "file"}


class GrepInput(ToolInput):
    pattern: str = Field(
        min_length=1,
        description="Regular expression (Rust regex syntax, like PCRE without look-around).",
    )
    path: str = Field(default=".", description="File or directory to search.")
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py` or `src/**/*.ts`.",
    )
    case_insensitive: bool = Field(default=False, description="Ignore case.")
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "files_with_matches: paths of matching files; content: matching lines as"
            " path:line:text; count: path:number of matching lines."
        ),
    )
    max_results: int = Field(
        default=DEFAULT_MAX_RESULTS, ge=1, description="Most output lines to return."
    )


SPEC = ToolSpec(
    name="grep",
    description=(
        "Search file contents with ripgrep. Skips files ignored by .gitignore and binary"
        " files; hidden files are searched. By default it lists the matching files"
        " (sorted by path); output_mode=content shows the matching lines with line"
        " numbers, count shows matches per file. Escape regex metacharacters to search"
        " for literal text (`foo\\(` for `foo(`). A glob without `/` matches file names at"
        " any depth; a glob with `/` is relative to `path`. Use it to find definitions"
        " and usages instead of reading files one by one."
    ),
    input_schema=input_schema(GrepInput),
)


def build_argv(request: GrepInput, root: SearchRoot) -> list[str]:
    argv = ["rg", *WALK_FLAGS, *_MODE_FLAGS[request.output_mode]]
    if request.case_insensitive:
        argv.append("--ignore-case")
    if request.glob is not None:
        argv.append(f"--glob={request.glob}")
    # Later globs win: the git database stays out whatever the filter says.
    argv.append(NOT_GIT)
    return [*argv, "--", request.pattern, root.target]


class GrepTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(GrepInput, args)
        root = await search_root(self._sandbox, request.path, files_allowed=True)
        result = await run_search(self._sandbox, build_argv(request, root), root)
        output = result.output.decode("utf-8", errors="replace")
        if result.exit_code == 1:
            return ToolOutput("no matches")
        if result.exit_code != 0:
            raise ToolError(output.strip() or f"rg failed with exit code {result.exit_code}")
        # Not splitlines(): a form feed inside a matched line is no line break.
        lines = [root.shown(line) for line in output.removesuffix("\n").split("\n")]
        unit = _UNITS[request.output_mode]
        advice = "narrow the search or raise max_results"
        return ToolOutput(cap_lines(lines, request.max_results, unit, advice))
