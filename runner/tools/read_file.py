"""read_file: a text file's lines, numbered like `cat -n`."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import decode_text, plural, read_bytes
from runner.tools.schema import ToolInput, input_schema, parse

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000


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
        " of edit_file's old_string. Shows up to 2000 lines from `offset`; for a longer"
        " file, read on with a later offset, or find the part you need with grep first."
        " Lines over 2000 characters are cut short. Binary files are refused."
    ),
    input_schema=input_schema(ReadFileInput),
)


def render(path: str, text: str, offset: int, limit: int) -> str:
    """The numbered lines `offset` .. `offset + limit - 1` of `text`, read from `path`."""
    if not text:
        return f"{path} is empty"
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    total = len(lines)
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {path} ({plural(total, 'line')})")
    shown = lines[offset - 1 : offset - 1 + limit]
    last = offset - 1 + len(shown)
    body = "\n".join(
        f"{number:>6}\t{_clip(line)}" for number, line in enumerate(shown, start=offset)
    )
    if offset == 1 and last == total:
        return body
    more = f"; continue with offset={last + 1}" if last < total else ""
    return f"{body}\n(lines {offset}-{last} of {total}{more})"


def _clip(line: str) -> str:
    line = line.removesuffix("\r")
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters]"


class ReadFileTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ReadFileInput, args)
        data = await read_bytes(self._sandbox, request.path)
        text = decode_text(data)
        if text is None:
            raise ToolError(
                f"{request.path} is a binary file ({plural(len(data), 'byte')});"
                " read_file shows text files only"
            )
        return ToolOutput(render(request.path, text, request.offset, request.limit))
