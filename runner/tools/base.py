"""The tool protocol the agent loop runs, and what a tool returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from runner.llm.types import Image, JSONObject, Text, ToolSpec, Usage

# What the loop passes on of one tool's output, unless it is given another
# cap: more is cut to its head and tail (runner/agent/capping.py).
DEFAULT_OUTPUT_CAP = 32 * 1024


@dataclass(frozen=True, slots=True)
class ToolOutput:
    content: str | tuple[Text | Image, ...]
    is_error: bool = False
    # The output's own size, which the loop's truncation marker reports, when
    # it is not the text's: the text is an excerpt (head and tail) of a longer
    # output, or adds lines of the tool's own (bash's exit code).
    total_bytes: int | None = None
    total_lines: int | None = None


class ToolError(Exception):
    """A failure the model should read and can act on: bad path, no match, ...

    Its message becomes an `is_error` tool result; the loop goes on.
    """


def _unspent(usage: Usage) -> None:
    """Where usage goes when nobody counts it (a tool called outside the loop)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool call knows about itself beyond its input."""

    call_id: str
    # Publishes a frozen dataclass (for example a checklist change) on the
    # agent's event stream, wrapped in a `ToolNotice`.
    emit: Callable[[object], None]
    # Reports tokens the tool's own model calls used; the loop adds them to
    # the agent's usage at once, so they count even when the call is cancelled.
    spend: Callable[[Usage], None] = _unspent
    # The bytes of output the loop passes on whole. A tool that can page
    # (read_file) fits its output within them, so that nothing it shows is
    # cut and it can say exactly where to go on.
    output_cap: int = DEFAULT_OUTPUT_CAP


class Tool(Protocol):
    @property
    def spec(self) -> ToolSpec: ...

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        """Run with `args`, already validated against `spec.input_schema`.

        Raise `ToolError` for a failure the model should see; any other
        exception also becomes an `is_error` result, named by its type.
        """
        ...
