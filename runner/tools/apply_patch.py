"""apply_patch: add, delete, update and move files with one patch, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import PathOutsideTree, Sandbox
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.edit_file import MAX_EDIT_BYTES
from runner.tools.files import decode_text, path_error, tree_relative
from runner.tools.patch_format import AddFile, DeleteFile, PatchError, UpdateFile, apply_hunks
from runner.tools.patch_format import parse as parse_patch
from runner.tools.patch_grammar import PATCH_GRAMMAR
from runner.tools.schema import ToolInput, input_schema, parse

__all__ = ["SPEC", "ApplyPatchTool"]

# Removing a file is a command in the sandbox, which has no call for it.
REMOVE_TIMEOUT = 30.0


class ApplyPatchInput(ToolInput):
    input: str = Field(
        description="The whole patch, from '*** Begin Patch' to '*** End Patch'.",
    )


SPEC = ToolSpec(
    name="apply_patch",
    description=(
        "Edit files with a patch in this format:\n"
        "*** Begin Patch\n"
        "*** Add File: path/new.py\n"
        "+each line of the new file, prefixed with +\n"
        "*** Delete File: path/old.py\n"
        "*** Update File: path/app.py\n"
        "*** Move to: path/main.py   (optional: rename the file)\n"
        "@@ def greet():   (each hunk opens with @@, then optionally a line above it)\n"
        " a context line, prefixed with a space\n"
        "-a line to remove\n"
        "+a line to add\n"
        "*** End Patch\n"
        "Give about 3 lines of context above and below each change, each hunk opened"
        " by its own @@ line. End a hunk with '*** End of File' when it must match at the"
        " end. Paths are relative to the repository root. Context and removed lines"
        " must match the file; when they do not exactly, a unique match ignoring trailing"
        " whitespace, then indentation, then Unicode punctuation is used and the answer"
        " says so. The patch applies entirely or not at all."
    ),
    input_schema=input_schema(ApplyPatchInput),
    # GPT-5-class models write the patch itself, in this grammar, not a JSON string.
    grammar=PATCH_GRAMMAR,
)


@dataclass(frozen=True, slots=True)
class _File:
    """A file the patch touches: as it was, and as the patch leaves it."""

    before: bytes | None
    after: bytes | None


class ApplyPatchTool:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        return await self.apply(parse(ApplyPatchInput, args).input)

    async def apply(self, patch: str) -> ToolOutput:
        """Apply `patch`'s text; what changed, or a ToolError with nothing changed."""
        try:
            ops = parse_patch(patch).ops
        except PatchError as error:
            raise ToolError(f"invalid patch: {error}") from None
        files: dict[str, _File] = {}
        report: list[str] = []
        for op in ops:
            path = self._key(op.path)
            if isinstance(op, AddFile):
                # As Codex does: adding a file that exists replaces it.
                await self._load(files, path, op.path, must_exist=False)
                files[path] = _File(files[path].before, op.content.encode("utf-8"))
                report.append(f"A {op.path}")
            elif isinstance(op, DeleteFile):
                await self._load(files, path, op.path, must_exist=True)
                files[path] = _File(files[path].before, None)
                report.append(f"D {op.path}")
            else:
                report.append(await self._update(files, path, op))
        await self._commit(files)
        return ToolOutput("applied the patch:\n" + "\n".join(report))

    async def _update(self, files: dict[str, _File], path: str, op: UpdateFile) -> str:
        data = await self._load(files, path, op.path, must_exist=True)
        assert data is not None
        text = decode_text(data)
        if text is None:
            raise ToolError(f"{op.path} is a binary file; apply_patch changes text files only")
        # A CRLF file is patched with \n and written back with \r\n.
        crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
        if crlf:
            text = text.replace("\r\n", "\n")
        try:
            updated = apply_hunks(op.path, text, op.hunks)
        except PatchError as error:
            raise ToolError(f"{error}; nothing was changed") from None
        written = (updated.text.replace("\n", "\r\n") if crlf else updated.text).encode("utf-8")
        notes = "".join(
            f"; hunk {number} matched {how}"
            for number, how in enumerate(updated.leniencies, start=1)
            if how is not None
        )
        if op.move_to is None:
            files[path] = _File(files[path].before, written)
            return f"M {op.path}{notes}"
        target = self._key(op.move_to)
        await self._load(files, target, op.move_to, must_exist=False)
        files[path] = _File(files[path].before, None)
        files[target] = _File(files[target].before, written)
        return f"M {op.path} -> {op.move_to}{notes}"

    def _key(self, path: str) -> str:
        return tree_relative(path, self._sandbox.root)

    async def _load(
        self, files: dict[str, _File], key: str, path: str, *, must_exist: bool
    ) -> bytes | None:
        """The file at `key` as the operations so far left it (read once, checked to
        lie in the tree); a ToolError when it must exist and does not."""
        if key not in files:
            before = await self._read(path)
            files[key] = _File(before, before)
        current = files[key].after
        if must_exist and current is None:
            raise ToolError(f"{path} does not exist; nothing was changed")
        return current

    async def _read(self, path: str) -> bytes | None:
        try:
            # A byte past the ceiling says the file is too large before any of it is read.
            beyond = await self._sandbox.read(path, offset=MAX_EDIT_BYTES, limit=1)
            if beyond:
                raise ToolError(
                    f"{path} is larger than {MAX_EDIT_BYTES // 2**20} MiB, more than"
                    " apply_patch changes; edit it with shell (e.g. sed -i)"
                )
            return await self._sandbox.read(path)
        except FileNotFoundError:
            return None
        except (PathOutsideTree, OSError) as error:
            raise ToolError(f"{path_error(path, error)}; nothing was changed") from None

    async def _commit(self, files: dict[str, _File]) -> None:
        """Write every change; when one fails, put back those made before it."""
        done: list[tuple[str, bytes | None]] = []
        changes = [(key, file) for key, file in files.items() if file.after != file.before]
        # Writes before removals, so a move never loses its only copy.
        changes.sort(key=lambda change: change[1].after is None)
        try:
            for key, file in changes:
                await self._put(key, file.after)
                done.append((key, file.before))
        except (PathOutsideTree, OSError, ToolError) as error:
            for key, before in reversed(done):
                try:
                    await self._put(key, before)
                except (PathOutsideTree, OSError, ToolError):
                    continue
            failed = changes[len(done)][0]
            reason = error if isinstance(error, ToolError) else path_error(failed, error)
            raise ToolError(f"{reason}; the files changed before it were put back") from None

    async def _put(self, key: str, data: bytes | None) -> None:
        if data is not None:
            await self._sandbox.write(key, data)
            return
        result = await self._sandbox.run(["rm", "-f", "--", key], timeout=REMOVE_TIMEOUT)
        if result.exit_code != 0 or result.timed_out:
            shown = result.output.decode("utf-8", errors="replace").strip()
            raise ToolError(f"{key} could not be deleted: {shown or 'rm failed'}")
