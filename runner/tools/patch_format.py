"""The Codex patch format apply_patch takes: parsed into values, applied to text.

    *** Begin Patch
    *** Add File: path        then the file's lines, each prefixed "+"
    *** Delete File: path
    *** Update File: path     optionally "*** Move to: path", then hunks:
    @@ optional context line  the lines to find and change, prefixed " ", "-" or "+";
                              "*** End of File" anchors a hunk at the end
    *** End Patch

Pure: no files, no sandbox. A hunk is found the way edit_file finds its
old_string (`matching.find`: exactly, else leniently), as whole lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from runner.tools.matching import find, nearest

__all__ = [
    "AddFile",
    "DeleteFile",
    "FileOp",
    "Hunk",
    "Patch",
    "PatchError",
    "UpdateFile",
    "Updated",
    "apply_hunks",
    "parse",
]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"

# Models that learnt to call apply_patch from a shell wrap the patch in a heredoc.
_HEREDOC_OPENERS = frozenset({"<<EOF", "<<'EOF'", '<<"EOF"'})


class PatchError(ValueError):
    """A patch that cannot be parsed or applied; its message is one line."""


@dataclass(frozen=True, slots=True)
class Hunk:
    # The `@@` lines before it, each sought in turn, in the order given.
    contexts: tuple[str, ...]
    old: tuple[str, ...]
    new: tuple[str, ...]
    end_of_file: bool
    # Where the hunk starts in the patch (1-based), for error messages.
    line: int


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    content: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    path: str


@dataclass(frozen=True, slots=True)
class UpdateFile:
    path: str
    move_to: str | None
    hunks: tuple[Hunk, ...]


FileOp: TypeAlias = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True, slots=True)
class Patch:
    ops: tuple[FileOp, ...]


@dataclass(frozen=True, slots=True)
class Updated:
    text: str
    # Per hunk: how it matched when not exactly (None when exactly).
    leniencies: tuple[str | None, ...]


def parse(patch: str) -> Patch:
    """`patch` as file operations; PatchError naming the line that is wrong."""
    lines = [line.removesuffix("\r") for line in patch.strip().split("\n")]
    first = 1
    if len(lines) >= 4 and lines[0].strip() in _HEREDOC_OPENERS and lines[-1].strip() == "EOF":
        lines, first = lines[1:-1], 2
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the patch must start with the line '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"the patch must end with the line '{END}'")
    parser = _Parser(lines[1:-1], first + 1)
    ops = parser.ops()
    if not ops:
        raise PatchError("the patch has no file operation (*** Add/Delete/Update File: path)")
    return Patch(ops)


class _Parser:
    """Reads file operations from the lines between the patch markers."""

    def __init__(self, lines: list[str], first: int) -> None:
        self._lines = lines
        self._at = 0
        # The patch line number of `lines[0]`.
        self._first = first

    def ops(self) -> tuple[FileOp, ...]:
        ops: list[FileOp] = []
        while self._at < len(self._lines):
            line = self._lines[self._at].strip()
            if not line:
                self._at += 1
            elif line.startswith(ADD):
                ops.append(AddFile(self._path(ADD), self._added()))
            elif line.startswith(DELETE):
                ops.append(DeleteFile(self._path(DELETE)))
            elif line.startswith(UPDATE):
                ops.append(self._update())
            else:
                raise self._error(
                    f"expected '{ADD} path', '{DELETE} path' or '{UPDATE} path',"
                    f" got {_quoted(self._lines[self._at])}"
                )
        return tuple(ops)

    def _number(self) -> int:
        return self._first + self._at

    def _error(self, message: str) -> PatchError:
        return PatchError(f"line {self._number()}: {message}")

    def _path(self, marker: str) -> str:
        path = self._lines[self._at].strip().removeprefix(marker).strip()
        if not path:
            raise self._error(f"'{marker}' names no path")
        self._at += 1
        return path

    def _added(self) -> str:
        content: list[str] = []
        while self._at < len(self._lines) and self._lines[self._at].startswith("+"):
            content.append(self._lines[self._at][1:] + "\n")
            self._at += 1
        return "".join(content)

    def _update(self) -> UpdateFile:
        start = self._number()
        path = self._path(UPDATE)
        move_to = None
        if self._at < len(self._lines) and self._lines[self._at].strip().startswith(MOVE):
            move_to = self._path(MOVE)
        hunks: list[Hunk] = []
        while self._at < len(self._lines):
            line = self._lines[self._at]
            if line.strip().startswith("***") and line.strip() != END_OF_FILE:
                break
            if not line.strip() and not hunks:
                # Blank lines between the header and the first hunk separate, not match.
                self._at += 1
                continue
            hunks.append(self._hunk(first=not hunks))
        if not hunks:
            raise PatchError(f"line {start}: '{UPDATE} {path}' has no hunk to apply")
        return UpdateFile(path, move_to, tuple(hunks))

    def _hunk(self, *, first: bool) -> Hunk:
        start = self._number()
        contexts: list[str] = []
        while self._at < len(self._lines) and self._lines[self._at].strip().startswith("@@"):
            header = self._lines[self._at].strip().removeprefix("@@").strip()
            if header:
                contexts.append(header)
            self._at += 1
        if not first and self._number() == start:
            raise self._error(
                f"expected a hunk starting with '@@', got {_quoted(self._lines[self._at])}"
            )
        old: list[str] = []
        new: list[str] = []
        end_of_file = False
        while self._at < len(self._lines):
            line = self._lines[self._at]
            marker, body = line[:1], line[1:]
            if line.strip() == END_OF_FILE:
                end_of_file = True
                self._at += 1
                break
            if line.startswith("@@") or line.strip().startswith("***"):
                break
            if marker == "":
                # An empty line in a hunk is an empty context line whose space was lost.
                old.append("")
                new.append("")
            elif marker == " ":
                old.append(body)
                new.append(body)
            elif marker == "-":
                old.append(body)
            elif marker == "+":
                new.append(body)
            else:
                raise self._error(
                    f"a hunk line must start with ' ', '-' or '+', got {_quoted(line)}"
                )
            self._at += 1
        if not old and not new:
            raise PatchError(f"line {start}: the hunk has no lines")
        return Hunk(tuple(contexts), tuple(old), tuple(new), end_of_file, start)


def apply_hunks(path: str, text: str, hunks: tuple[Hunk, ...]) -> Updated:
    """`text` (with `\\n` line endings) with `hunks` applied in order, each found
    below the one before; the first that cannot be found fails them all.

    The result ends with a newline, as every line of a patch does.
    """
    if text and not text.endswith("\n"):
        text += "\n"
    cursor = 0
    leniencies: list[str | None] = []
    for number, hunk in enumerate(hunks, start=1):
        where = f"{path}: hunk {number} of {len(hunks)} (patch line {hunk.line})"
        for context in hunk.contexts:
            cursor = _after_context(text, cursor, context, where)
        text, cursor, how = _apply_one(text, cursor, hunk, where)
        leniencies.append(how)
    return Updated(text, tuple(leniencies))


def _after_context(text: str, cursor: int, context: str, where: str) -> int:
    """The start of the line after the first line below `cursor` that is `context`
    (exactly, else leniently, else containing it)."""
    found = find("\n" + text[cursor:], f"\n{context}\n", "")
    if found.spans and (found.leniency is None or len(found.spans) == 1):
        return cursor + found.spans[0][1] - 1
    at = text.find(context.strip(), cursor)
    if at >= 0:
        return text.index("\n", at) + 1
    raise PatchError(f"{where}: no line below the hunks before it matches '@@ {context}'")


def _apply_one(text: str, cursor: int, hunk: Hunk, where: str) -> tuple[str, int, str | None]:
    """`text` with `hunk` applied below `cursor`; where the change ends; how it matched."""
    old, new = list(hunk.old), list(hunk.new)
    if not old:
        # Nothing to find: the lines go below the context line, or else at the end.
        at = cursor if hunk.contexts and not hunk.end_of_file else len(text)
        added = _joined(new)
        return text[:at] + added + text[at:], at + len(added), None
    # A leading line break makes every match start at a line's start.
    region = "\n" + text[cursor:]
    located = _locate(region, old, new, hunk.end_of_file, where)
    # A blank last line often stands for the end of the file, not a line in it.
    while located is None and len(old) > 1 and old[-1] == "" and (not new or new[-1] == ""):
        old, new = old[:-1], new[:-1]
        located = _locate(region, old, new, hunk.end_of_file, where)
    if located is None:
        raise PatchError(f"{where}: {_not_found(text, hunk)}")
    (start, end), replacement, how = located
    changed = region[:start] + replacement + region[end:]
    return text[:cursor] + changed[1:], cursor + start - 1 + len(replacement), how


def _locate(
    region: str, old: list[str], new: list[str], end_of_file: bool, where: str
) -> tuple[tuple[int, int], str, str | None] | None:
    """Where the `old` lines are in `region` (which starts with a line break): the
    span, its replacement and how it matched; None when they are not there."""
    found = find(region, "\n" + _joined(old), "\n" + _joined(new))
    how = found.leniency.description if found.leniency else None
    if how is not None and len(found.spans) > 1:
        raise PatchError(
            f"{where}: no exact match, and {len(found.spans)} places {how};"
            " add context lines or an '@@' line to make it unique"
        )
    spans = [s for s in found.spans if not end_of_file or s[1] == len(region)]
    if not spans:
        return None
    # Exactly: the first place below the hunks before it, as a diff applies.
    return (spans[-1] if end_of_file else spans[0]), found.replacement, how


def _not_found(text: str, hunk: Hunk) -> str:
    at_end = " at the end of the file" if hunk.end_of_file else ""
    message = f"the lines to change (' ' and '-') were not found{at_end}"
    where = nearest(text, "\n".join(hunk.old))
    if where is None:
        return message
    first, last = where
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"{message}; the closest text is at {lines} (read_file shows it)"


def _joined(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _quoted(line: str) -> str:
    shown = line if len(line) <= 80 else line[:80] + "…"
    return repr(shown)
