"""The checklist the model keeps while it works (the `workflow` tool).

`Checklist` holds the current list; the bot renders it into the live progress
comment from the `ChecklistChanged` events the tool emits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from runner.llm.types import JSONObject, ToolSpec
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.schema import ToolInput, input_schema, parse

Status = Literal["pending", "in_progress", "done"]

_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


@dataclass(frozen=True, slots=True)
class ChecklistItem:
    content: str
    status: Status


@dataclass(frozen=True, slots=True)
class ChecklistChanged:
    """The checklist as it now stands, published whenever it changes."""

    items: tuple[ChecklistItem, ...]


class InvalidChecklist(ValueError):
    """A checklist that breaks a rule, such as two items in progress."""


def check(items: Iterable[ChecklistItem]) -> None:
    """Raise InvalidChecklist unless `items` is a valid checklist."""
    working = [item.content for item in items if item.status == "in_progress"]
    if len(working) > 1:
        raise InvalidChecklist(
            f"{len(working)} items are in_progress; at most one may be: finish one"
            " (done) or set the others back to pending"
        )


def render(items: Iterable[ChecklistItem]) -> str:
    lines = [f"{_MARKS[item.status]} {item.content}" for item in items]
    return "\n".join(lines) if lines else "the checklist is empty"


class Checklist:
    """The current checklist; each update replaces it whole."""

    def __init__(self) -> None:
        self._items: tuple[ChecklistItem, ...] = ()

    @property
    def items(self) -> tuple[ChecklistItem, ...]:
        return self._items

    def update(self, items: Iterable[ChecklistItem]) -> bool:
        """Replace the checklist; True when it differs from the previous one."""
        new = tuple(items)
        check(new)
        changed = new != self._items
        self._items = new
        return changed


class _ItemInput(ToolInput):
    content: str = Field(min_length=1, description="The step, as a short imperative sentence.")
    status: Status = Field(description="pending, in_progress (at most one item) or done.")


class ChecklistInput(ToolInput):
    items: list[_ItemInput] = Field(
        description="The whole checklist in order; it replaces the previous one."
    )


SPEC = ToolSpec(
    # The name the model has always been given; saved sessions call it so.
    name="workflow",
    description=(
        "Keep a checklist of the steps of your task, shown live to the people following"
        " the job. Send the whole list each time; it replaces the previous one. Mark the"
        " step you start in_progress (at most one at a time) and mark it done as soon as"
        " it is finished, before starting the next. Use it for work of three or more"
        " steps; skip it for a quick one-step change."
    ),
    input_schema=input_schema(ChecklistInput),
)


class ChecklistTool:
    def __init__(self, checklist: Checklist) -> None:
        self._checklist = checklist

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(ChecklistInput, args)
        items = tuple(ChecklistItem(item.content, item.status) for item in request.items)
        try:
            changed = self._checklist.update(items)
        except InvalidChecklist as error:
            raise ToolError(str(error)) from None
        if changed:
            ctx.emit(ChecklistChanged(items))
        return ToolOutput(render(items))
