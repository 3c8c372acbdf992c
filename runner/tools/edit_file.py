"""edit_file: replace text in a file, one edit or several at once."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.files import decode_text, path_error, plural
from runner.tools.matching import find, nearest
from runner.tools.schema import ToolInput, input_schema, parse

# edit_file holds the file a few times over (bytes, text, the edited text);
# a larger file is left to bash (sed -i), which streams it.
MAX_EDIT_BYTES = 16 * 1024 * 1024

# Lines shown around each edit, and at most in all, in the confirmation.
CONTEXT_LINES = 3
MAX_SNIPPET_LINES = 60
MAX_LINE_CHARS = 500

_OLD = (
    "The text to replace, exactly as in the file (whitespace and indentation included,"
    " without read_file's line numbers)."
)
_NEW = "The text to put in its place."
_ALL = "Replace every occurrence instead of exactly one."


class Edit(ToolInput):
    """One replacement, applied to the text the edits before it left."""

    old_string: str = Field(description=_OLD)
    new_string: str = Field(description=_NEW)
    replace_all: bool = Field(default=False, description=_ALL)


class EditFileInput(ToolInput):
    path: str = Field(description="File to edit, relative to the repository root.")
    old_string: str | None = Field(default=None, description=_OLD + " Not with edits.")
    new_string: str | None = Field(default=None, description=_NEW)
    replace_all: bool = Field(default=False, description=_ALL)
    edits: list[Edit] | None = Field(
        default=None,
        min_length=1,
        description=(
            "Several replacements in one call, instead of old_string and new_string:"
            " applied in order, and all or none."
        ),
    )


SPEC = ToolSpec(
    name="edit_file",
    description=(
        "Replace text in an existing file: old_string must match the file (whitespace,"
        " indentation and line breaks included, without read_file's line numbers) and,"
        " unless replace_all is set, exactly once; include a few lines of surrounding"
        " context to make it unique. For several changes to one file pass `edits`, a list"
        " of {old_string, new_string, replace_all}, applied in order and all or none."
        " When old_string is not found exactly, a unique match ignoring trailing"
        " whitespace, then indentation, then Unicode punctuation is used, and the answer"
        " says so; otherwise it names the closest text. Line endings stay as the file has"
        " them. Answers with the edited lines, numbered. Read the file before editing it."
        " To create a file or rewrite it entirely, use write_file."
    ),
    input_schema=input_schema(EditFileInput),
)


# What one edit did: each span it replaced, with the span written in its place.
Written = list[tuple[tuple[int, int], tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class Edited:
    text: str
    # Per edit: the spans of `text` it wrote, and how its old_string matched.
    spans: tuple[tuple[tuple[int, int], ...], ...]
    leniencies: tuple[str | None, ...]


def requested_edits(request: EditFileInput) -> list[Edit]:
    """The edits `request` asks for, in one form or the other.

    The schema cannot say "these two, or that one" (the API refuses a top-level
    oneOf), so the alternatives are checked here.
    """
    single = request.old_string is not None or request.new_string is not None
    if request.edits is not None:
        if single or request.replace_all:
            raise ToolError(
                "invalid input: give edits or old_string/new_string/replace_all, not both"
            )
        return request.edits
    if request.old_string is None:
        raise ToolError("invalid input: old_string: Field required (or give edits)")
    if request.new_string is None:
        raise ToolError("invalid input: new_string: Field required")
    return [
        Edit(
            old_string=request.old_string,
            new_string=request.new_string,
            replace_all=request.replace_all,
        )
    ]


def apply_edits(path: str, text: str, edits: list[Edit]) -> Edited:
    """`text` with `edits` applied in order; the first that fails fails them all."""
    spans: list[list[tuple[int, int]]] = []
    leniencies: list[str | None] = []
    for number, edit in enumerate(edits, start=1):
        try:
            text, written, leniency = _apply(path, text, edit)
        except ToolError as error:
            if len(edits) == 1:
                raise
            raise ToolError(
                f"edit {number} of {len(edits)} failed, so none was applied: {error}"
            ) from None
        spans = [[_moved(span, written) for span in earlier] for earlier in spans]
        spans.append([new for _, new in written])
        leniencies.append(leniency)
    return Edited(text, tuple(tuple(s) for s in spans), tuple(leniencies))


def _apply(path: str, text: str, edit: Edit) -> tuple[str, Written, str | None]:
    """`text` with `edit` applied; each replaced span with the span written over it."""
    old, new = edit.old_string, edit.new_string
    if not old:
        raise ToolError("old_string is empty; to create or rewrite a file use write_file")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change")
    found = find(text, old, new)
    count = len(found.spans)
    how = found.leniency.description if found.leniency else None
    if count == 0:
        raise ToolError(_not_found(path, text, old))
    if count > 1 and how is not None:
        raise ToolError(
            f"no exact match for old_string in {path}, and {count} places {how};"
            " copy the text exactly or add surrounding context to make it unique"
        )
    if count > 1 and not edit.replace_all:
        raise ToolError(
            f"old_string matches {count} places in {path};"
            " add surrounding context to make it unique or set replace_all"
        )
    parts: list[str] = []
    written: Written = []
    last = shift = 0
    for start, end in found.spans:
        parts += [text[last:start], found.replacement]
        begin = start + shift
        written.append(((start, end), (begin, begin + len(found.replacement))))
        shift += len(found.replacement) - (end - start)
        last = end
    parts.append(text[last:])
    return "".join(parts), written, how


def _moved(span: tuple[int, int], written: Written) -> tuple[int, int]:
    """`span` of the text before an edit, in the text after it."""

    def position(at: int, *, is_end: bool) -> int:
        shift = 0
        for (old_start, old_end), (new_start, new_end) in written:
            if at < old_start or (is_end and at == old_start):
                break
            if at < old_end or (is_end and at == old_end):
                # Inside what the edit replaced: the span now covers its replacement.
                return new_end if is_end else new_start
            shift = new_end - old_end
        return at + shift

    start = position(span[0], is_end=False)
    return start, max(start, position(span[1], is_end=True))


def _not_found(path: str, text: str, old: str) -> str:
    message = f"no match for old_string in {path}"
    where = nearest(text, old)
    if where is None:
        return message
    first, last = where
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    shown = _numbered(text.split("\n"), first, min(last, first + MAX_SNIPPET_LINES - 1))
    return f"{message}; the closest text is at {lines}:\n{shown}"


def _numbered(lines: list[str], first: int, last: int) -> str:
    return "\n".join(
        f"{number:>6}\t{_clip(lines[number - 1])}" for number in range(first, last + 1)
    )


def _clip(line: str) -> str:
    # As read_file shows them: a file of mixed endings keeps its \r, unseen.
    line = line.removesuffix("\r")
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} characters]"


def snippet(text: str, spans: list[tuple[int, int]]) -> str:
    """The lines `spans` cover, with a few around them, numbered like read_file's."""
    if not text:
        return "(the file is now empty)"
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    ranges: list[list[int]] = []
    for start, end in sorted(spans):
        first = text.count("\n", 0, start) + 1 - CONTEXT_LINES
        last = text.count("\n", 0, max(start, end - 1)) + 1 + CONTEXT_LINES
        first, last = max(first, 1), min(last, len(lines))
        # A gap of one line is shown rather than marked.
        if ranges and first <= ranges[-1][1] + 2:
            ranges[-1][1] = max(ranges[-1][1], last)
        else:
            ranges.append([first, last])
    shown: list[str] = []
    budget = MAX_SNIPPET_LINES
    for first, last in ranges:
        if budget <= 0:
            shown.append("(more edited lines not shown; read_file shows them)")
            break
        end = min(last, first + budget - 1)
        shown.append(_numbered(lines, first, end))
        budget -= end - first + 1
    return "\n...\n".join(shown)


def confirmation(path: str, edits: list[Edit], edited: Edited) -> str:
    def line_of(spans: tuple[tuple[int, int], ...]) -> int:
        return edited.text.count("\n", 0, min(start for start, _ in spans)) + 1

    def outcome(spans: tuple[tuple[int, int], ...], how: str | None) -> str:
        said = f"replaced {plural(len(spans), 'occurrence')}"
        matched = f"; old_string matched {how}" if how else ""
        return f"{said} (first at line {line_of(spans)}{matched})"

    results = [
        outcome(spans, how) for spans, how in zip(edited.spans, edited.leniencies, strict=True)
    ]
    every = [span for spans in edited.spans for span in spans]
    if len(edits) == 1:
        head = results[0].replace(" (", f" in {path} (", 1)
    else:
        numbered = [f"edit {n}: {result}" for n, result in enumerate(results, start=1)]
        head = "\n".join([f"applied {plural(len(edits), 'edit')} to {path}:", *numbered])
    return f"{head}\n{snippet(edited.text, every)}"


class EditFileTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(EditFileInput, args)
        edits = requested_edits(request)
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
        # A CRLF file is matched and edited with \n, and written back with \r\n;
        # a file of mixed endings is edited as it is.
        crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
        if crlf:
            text = text.replace("\r\n", "\n")
            edits = [
                Edit(
                    old_string=edit.old_string.replace("\r\n", "\n"),
                    new_string=edit.new_string.replace("\r\n", "\n"),
                    replace_all=edit.replace_all,
                )
                for edit in edits
            ]
        edited = apply_edits(request.path, text, edits)
        written = edited.text.replace("\n", "\r\n") if crlf else edited.text
        try:
            await self._sandbox.write(request.path, written.encode("utf-8"))
        except (PathOutsideTree, OSError) as error:
            raise path_error(request.path, error) from None
        return ToolOutput(confirmation(request.path, edits, edited))
