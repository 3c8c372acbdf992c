"""edit_file: replace an exact string in a file."""

from __future__ import annotations

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import decode_text, path_error, plural
from runner.tools.schema import ToolInput, input_schema, parse

# edit_file holds the file a few times over (bytes, text, the edited text);
# a larger file is left to bash (sed -i), which streams it.
MAX_EDIT_BYTES = 16 * 1024 * 1024


class EditFileInput(ToolInput):
    path: str = Field(description="File to edit, relative to the repository root.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


SPEC = ToolSpec(
    name="edit_file",
    description=(
        "Replace text in an existing file: old_string must match the file exactly"
        " (whitespace, indentation and line breaks included, without read_file's line"
        " numbers) and, unless replace_all is set, exactly once; include a few lines of"
        " surrounding context to make it unique. Read the file before editing it. To"
        " create a file or rewrite it entirely, use write_file."
    ),
    input_schema=input_schema(EditFileInput),
)


def apply_edit(path: str, text: str, old: str, new: str, *, replace_all: bool) -> tuple[str, str]:
    """`text` with the edit applied, and the confirmation the model reads."""
    if not old:
        raise ToolError("old_string is empty; to create or rewrite a file use write_file")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change")
    count = text.count(old)
    if count == 0:
        hint = ""
        if "\r\n" in text and "\r\n" not in old and old.replace("\n", "\r\n") in text:
            hint = " (the file has CRLF line endings: use \\r\\n in old_string and new_string)"
        raise ToolError(f"no match for old_string in {path}{hint}")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string matches {count} places in {path};"
            " add surrounding context to make it unique or set replace_all"
        )
    line = text[: text.index(old)].count("\n") + 1
    edited = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    replaced = plural(count if replace_all else 1, "occurrence")
    return edited, f"replaced {replaced} in {path} (first at line {line})"


class EditFileTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(EditFileInput, args)
        try:
            # A byte past the ceiling says the file is too large before any of it is read.
            beyond = await self._sandbox.read(request.path, offset=MAX_EDIT_BYTES, limit=1)
            data = (
                b"" if beyond else await self._sandbox.read(request.path, limit=MAX_EDIT_BYTES + 1)
            )
        except FileNotFoundError:
            raise ToolError(f"{request.path} does not exist; create it with write_file") from None
        except (PathOutsideTree, OSError) as error:
            raise path_error(request.path, error) from None
        if beyond or len(data) > MAX_EDIT_BYTES:
            raise ToolError(
                f"{request.path} is larger than {MAX_EDIT_BYTES // 2**20} MiB, more than"
                " edit_file changes; edit it with bash (e.g. sed -i)"
            )
        text = decode_text(data)
        if text is None:
            raise ToolError(f"{request.path} is a binary file; edit_file changes text files only")
        edited, confirmation = apply_edit(
            request.path,
            text,
            request.old_string,
            request.new_string,
            replace_all=request.replace_all,
        )
        try:
            await self._sandbox.write(request.path, edited.encode("utf-8"))
        except (PathOutsideTree, OSError) as error:
            raise path_error(request.path, error) from None
        return ToolOutput(confirmation)
