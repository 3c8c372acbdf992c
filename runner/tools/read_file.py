"""read_file: a text file's lines, numbered like `cat -n`."""

from __future__ import annotations

import contextlib

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import BINARY_PROBE_BYTES, path_error, plural
from runner.tools.paging import MAX_LINE_CHARS, page
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_LIMIT = 2000
# A line in a page of many keeps enough bytes for MAX_LINE_CHARS characters of any UTF-8 text.
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
# How much of one line read_file reads to show its rest (`column`): past it,
# a shell command reads on. Bounds the worker's memory, whatever the file.
MAX_COLUMN_BYTES = 16 * 1024 * 1024
# How far into a file its lines are counted; past it the count is a floor.
MAX_SCAN_BYTES = 1024 * 1024 * 1024


class ReadFileInput(ToolInput):
    path: str = Field(description="File to read, relative to the repository root.")
    offset: int = Field(default=1, ge=1, description="First line to show, 1-based.")
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, description="How many lines to show from offset, at most."
    )
    column: int = Field(
        default=1,
        ge=1,
        description=(
            "First character of line `offset` to show, 1-based: for the rest of a line"
            " that was cut."
        ),
    )


SPEC = ToolSpec(
    name="read_file",
    description=(
        "Read a UTF-8 text file from the repository. Lines come numbered like `cat -n`"
        " (line number, tab, line), which is not part of the file: leave the numbers out"
        " of edit_file's old_string. Shows as many whole lines from `offset` as fit about"
        " 32 KB (at most `limit`, 2000 by default); a longer file ends with where to"
        " continue (offset=N), and a large one is quicker to search with grep first. A line"
        " over 2000 characters is cut, and the cut says where its rest starts (offset=N,"
        " column=M). Binary files are refused."
    ),
    input_schema=input_schema(ReadFileInput),
)


def _decode(line: bytes, chars: int) -> str | None:
    """A kept line as text, or None if it is not UTF-8. A cut line may end
    inside a character, which is dropped."""
    trims = range(4) if chars > MAX_LINE_CHARS else range(1)
    for trim in trims:
        with contextlib.suppress(UnicodeDecodeError):
            return line[: len(line) - trim].decode("utf-8")
    return None


class ReadFileTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ReadFileInput, args)
        # Enough of each line for the page: its first MAX_LINE_CHARS characters,
        # or, from `column`, as many characters as the cap holds.
        keep = MAX_LINE_BYTES
        if request.column > 1:
            keep = min(max(keep, 4 * (request.column - 1 + ctx.output_cap)), MAX_COLUMN_BYTES)
        try:
            window = await self._sandbox.read_lines(
                request.path,
                start=request.offset,
                count=request.limit,
                max_line_bytes=keep,
                # A page shows at most the cap; its lines may hold up to four
                # bytes a character more than they show.
                max_bytes=max(keep, 4 * ctx.output_cap),
                max_scan=MAX_SCAN_BYTES,
            )
            head = await self._sandbox.read(request.path, limit=BINARY_PROBE_BYTES)
        except (PathOutsideTree, OSError) as error:
            raise path_error(request.path, error) from None
        pairs = zip(window.lines, window.chars, strict=True)
        texts = [_decode(line, chars) for line, chars in pairs]
        decoded = [text for text in texts if text is not None]
        if b"\0" in head or len(decoded) < len(texts):
            raise ToolError(
                f"{request.path} is a binary file ({plural(window.size, 'byte')});"
                " read_file shows text files only"
            )
        return ToolOutput(
            page(
                request.path,
                window,
                decoded,
                offset=request.offset,
                column=request.column,
                cap=ctx.output_cap,
            )
        )
