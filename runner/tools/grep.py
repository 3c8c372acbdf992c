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
    plural,
    run_search,
    search_root,
)
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_HEAD_LIMIT = 200
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
    type: str | None = Field(
        default=None,
        description=(
            "Only search files of this ripgrep file type, e.g. py, js, ts, rust, go, java"
            " (each stands for its usual globs; combines with glob)."
        ),
    )
    case_insensitive: bool = Field(default=False, description="Ignore case.")
    fixed_strings: bool = Field(
        default=False, description="Match the pattern as literal text, not as a regex."
    )
    multiline: bool = Field(
        default=False,
        description=(
            "Let a match span lines: `.` also matches a newline and `\\n` can be matched."
        ),
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "files_with_matches: paths of matching files; content: matching lines as"
            " path:line:text; count: path:number of matching lines."
        ),
    )
    before_context: int = Field(
        default=0,
        ge=0,
        description="content mode: lines to show before each match, as path-line-text.",
    )
    after_context: int = Field(
        default=0,
        ge=0,
        description="content mode: lines to show after each match, as path-line-text.",
    )
    context: int = Field(
        default=0,
        ge=0,
        description="content mode: lines to show before and after each match.",
    )
    offset: int = Field(
        default=0, ge=0, description="Output lines to skip, to page through long results."
    )
    head_limit: int = Field(
        default=DEFAULT_HEAD_LIMIT, ge=1, description="Most output lines to return."
    )


SPEC = ToolSpec(
    name="grep",
    description=(
        "Search file contents with ripgrep. Skips files ignored by .gitignore and binary"
        " files; hidden files are searched. By default it lists the matching files"
        " (sorted by path); output_mode=content shows the matching lines with line"
        " numbers (and context lines around them if asked), count shows matches per file."
        " Escape regex metacharacters to search for literal text (`foo\\(` for `foo(`),"
        " or set fixed_strings. A glob without `/` matches file names at any depth; a"
        " glob with `/` is relative to `path`. Long results come in pages of head_limit"
        " lines: continue with the offset it gives. Use it to find definitions and usages"
        " instead of reading files one by one."
    ),
    input_schema=input_schema(GrepInput),
)


def build_argv(request: GrepInput, root: SearchRoot) -> list[str]:
    argv = ["rg", *WALK_FLAGS, *_MODE_FLAGS[request.output_mode]]
    if request.case_insensitive:
        argv.append("--ignore-case")
    if request.fixed_strings:
        argv.append("--fixed-strings")
    if request.multiline:
        argv += ["--multiline", "--multiline-dotall"]
    argv += _context_flags(request)
    if request.type is not None:
        argv.append(f"--type={request.type}")
    if request.glob is not None:
        argv.append(f"--glob={request.glob}")
    # Later globs win: the git database stays out whatever the filter says.
    argv.append(NOT_GIT)
    return [*argv, "--", request.pattern, root.target]


def _context_flags(request: GrepInput) -> list[str]:
    # As with grep, -A and -B win over -C for their side.
    before = request.before_context or request.context
    after = request.after_context or request.context
    if not before and not after:
        return []
    if request.output_mode != "content":
        # The other modes print no lines, so the context would be dropped unsaid.
        field = "context" if request.context else "before_context" if before else "after_context"
        raise ToolError(f"{field} needs output_mode=content")
    return [f"--before-context={before}", f"--after-context={after}"]


def page(lines: list[str], offset: int, limit: int, unit: str) -> str:
    """Lines `offset` .. `offset + limit - 1`, and how to get the rest."""
    if offset >= len(lines):
        raise ToolError(
            f"offset {offset} is past the end of the results ({plural(len(lines), unit)})"
        )
    end = offset + limit
    text = "\n".join(lines[offset:end])
    if end < len(lines):
        left = len(lines) - end
        text += (
            f"\n({plural(left, 'more ' + unit)} not shown; continue with offset={end}"
            " or narrow the search)"
        )
    return text


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
        return ToolOutput(page(lines, request.offset, request.head_limit, unit))
