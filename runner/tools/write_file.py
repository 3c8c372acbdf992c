"""write_file: create a file or replace its whole content."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolOutput
from runner.tools.files import count_lines, path_error, plural
from runner.tools.schema import ToolInput, input_schema, parse


class WriteFileInput(ToolInput):
    path: str = Field(description="File to write, relative to the repository root.")
    content: str = Field(description="The file's complete new content.")


SPEC = ToolSpec(
    name="write_file",
    description=(
        "Write a file in the repository, replacing it entirely if it exists and creating"
        " missing parent directories. Use it for new files and complete rewrites; to change"
        " part of an existing file, edit_file is shorter and safer. End text files with a"
        " newline."
    ),
    input_schema=input_schema(WriteFileInput),
)


class WriteFileTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(WriteFileInput, args)
        data = request.content.encode("utf-8")
        try:
            await self._sandbox.write(request.path, data)
        except (PathOutsideTree, OSError) as error:
            raise path_error(request.path, error) from None
        lines = plural(count_lines(request.content), "line")
        return ToolOutput(f"wrote {lines} ({plural(len(data), 'byte')}) to {request.path}")
