from __future__ import annotations

import pytest

from runner.llm.types import JSONObject
from runner.tools import (
    Checklist,
    ChecklistChanged,
    ChecklistItem,
    ChecklistTool,
    ToolContext,
    ToolError,
    ToolOutput,
)

PLAN: JSONObject = {
    "items": [
        {"content": "Reproduce the failure", "status": "done"},
        {"content": "Fix the date parsing", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    ]
}
PLAN_ITEMS = (
    ChecklistItem("Reproduce the failure", "done"),
    ChecklistItem("Fix the date parsing", "in_progress"),
    ChecklistItem("Run the tests", "pending"),
)


async def test_renders_the_checklist_stores_it_and_emits_the_change(
    ctx: ToolContext, events: list[object]
) -> None:
    workflow = Checklist()

    output = await ChecklistTool(workflow)(PLAN, ctx)

    assert output == ToolOutput(
        "[x] Reproduce the failure\n[~] Fix the date parsing\n[ ] Run the tests"
    )
    assert workflow.items == PLAN_ITEMS
    assert events == [ChecklistChanged(items=PLAN_ITEMS)]


async def test_an_unchanged_list_emits_nothing(ctx: ToolContext, events: list[object]) -> None:
    tool = ChecklistTool(Checklist())

    await tool(PLAN, ctx)
    again = await tool(PLAN, ctx)

    assert again.content == "[x] Reproduce the failure\n[~] Fix the date parsing\n[ ] Run the tests"
    assert len(events) == 1


async def test_each_call_replaces_the_list(ctx: ToolContext, events: list[object]) -> None:
    workflow = Checklist()
    tool = ChecklistTool(workflow)

    await tool(PLAN, ctx)
    output = await tool({"items": [{"content": "Open the pull request", "status": "done"}]}, ctx)
    cleared = await tool({"items": []}, ctx)

    assert output.content == "[x] Open the pull request"
    assert cleared.content == "the checklist is empty"
    assert workflow.items == ()
    assert events == [
        ChecklistChanged(PLAN_ITEMS),
        ChecklistChanged((ChecklistItem("Open the pull request", "done"),)),
        ChecklistChanged(()),
    ]


async def test_two_items_in_progress_are_refused(ctx: ToolContext, events: list[object]) -> None:
    workflow = Checklist()
    tool = ChecklistTool(workflow)
    await tool(PLAN, ctx)

    with pytest.raises(ToolError) as raised:
        await tool(
            {
                "items": [
                    {"content": "a", "status": "in_progress"},
                    {"content": "b", "status": "in_progress"},
                ]
            },
            ctx,
        )

    assert str(raised.value) == (
        "2 items are in_progress; at most one may be: finish one (done)"
        " or set the others back to pending"
    )
    assert workflow.items == PLAN_ITEMS
    assert len(events) == 1


async def test_an_unknown_status_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as raised:
        await ChecklistTool(Checklist())({"items": [{"content": "a", "status": "blocked"}]}, ctx)

    assert str(raised.value) == (
        "invalid input: items.0.status: Input should be 'pending', 'in_progress' or 'done'"
    )


def test_events_are_frozen_values() -> None:
    event = ChecklistChanged((ChecklistItem("a", "done"),))

    with pytest.raises(AttributeError):
        event.items = ()  # type: ignore[misc]
    assert event == ChecklistChanged((ChecklistItem("a", "done"),))


def test_spec() -> None:
    spec = ChecklistTool(Checklist()).spec

    assert spec.name == "workflow"
    assert spec.input_schema == {
        "additionalProperties": False,
        "properties": {
            "items": {
                "description": "The whole checklist in order; it replaces the previous one.",
                "items": {
                    "additionalProperties": False,
                    "properties": {
                        "content": {
                            "description": "The step, as a short imperative sentence.",
                            "minLength": 1,
                            "type": "string",
                        },
                        "status": {
                            "description": "pending, in_progress (at most one item) or done.",
                            "enum": ["pending", "in_progress", "done"],
                            "type": "string",
                        },
                    },
                    "required": ["content", "status"],
                    "type": "object",
                },
                "type": "array",
            }
        },
        "required": ["items"],
        "type": "object",
    }
