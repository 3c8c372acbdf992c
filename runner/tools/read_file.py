"""read_file: a text file's lines, numbered like `cat -n`."""

from __future__ import annotations

import contextlib

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Lines, PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import BINARY_PROBE_BYTES, path_error, plural
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# A cut line keeps enough bytes for MAX_LINE_CHARS characters of any UTF-8 text.
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
# What one call shows at most: far above what the loop passes on (32 KiB),
# far below what would strain the worker, whatever the file's size.
MAX_WINDOW_BYTES = 1024 * 1024
# How far into a file its lines are counted; past it the count is a floor.
MAX_SCAN_BYTES = 1024 * 1024 * 1024


class ReadFileInput(ToolInput):
    path: str = Field(description="File to read, relative to the repository root.")
    offset: int = Field(default=1, ge=1, description="First line to show, 1-based.")
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, description="How many lines to show from offset."
    )


SPEC = ToolSpec(
    name="read_file",
    description=(
        "Read a UTF-8 text file from the repository. Lines come numbered like `cat -n`"
        " (line number, tab, line), which is not part of the file: leave the numbers out"
        " of edit_file's old_string. Shows up to 2000 lines (1 MiB) from `offset`; for a longer"
        " file, read on with a later offset, or find the part you need with grep first."
        " Lines over 2000 characters are cut short. Binary files are refused."
    ),
    input_schema=input_schema(ReadFileInput),
)


def render(path: str, window: Lines, offset: int, texts: list[str]) -> str:
    """The numbered lines from `offset` of `window`, decoded as `texts`, read from `path`."""
    total = window.total_lines
    if total == 0 and window.complete:
        return f"{path} is empty"
    if not texts:
        if window.complete:
            raise ToolError(f"offset {offset} is past the end of {path} ({plural(total, 'line')})")
        raise ToolError(
            f"offset {offset} is past the first {plural(total, 'line')} of {path}, as far as"
            f" read_file counts ({MAX_SCAN_BYTES // 2**20} MiB); read on with bash (sed -n)"
        )
    last = offset - 1 + len(texts)
    body = "\n".join(
        f"{number:>6}\t{_clip(line, chars)}"
        for number, (line, chars) in enumerate(zip(texts, window.chars, strict=True), start=offset)
    )
    if offset == 1 and last == total and window.complete:
        return body
    more = f"; continue with offset={last + 1}" if last < total or not window.complete else ""
    of = str(total) if window.complete else f"at least {total}"
    return f"{body}\n(lines {offset}-{last} of {of}{more})"


def _clip(line: str, chars: int) -> str:
    if chars <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {chars} characters]"


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
        try:
            window = await self._sandbox.read_lines(
                request.path,
                start=request.offset,
                count=request.limit,
                max_line_bytes=MAX_LINE_BYTES,
                max_bytes=MAX_WINDOW_BYTES,
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
        return ToolOutput(render(request.path, window, request.offset, decoded))
