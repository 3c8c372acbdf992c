"""Subagents: the `agent` tool, its supervisor and the inspect child's prompt."""

from runner.subagent.events import ChildEvent, ChildFinished, ChildStarted, ChildTurn
from runner.subagent.prompt import inspect_prompt
from runner.subagent.settings import SubagentSettings
from runner.subagent.supervisor import (
    ChildBudget,
    Placement,
    SubagentBudget,
    Supervisor,
    children_provider,
)
from runner.subagent.tool import SPEC, AgentTool, inspect_tools

__all__ = [
    "SPEC",
    "AgentTool",
    "ChildBudget",
    "ChildEvent",
    "ChildFinished",
    "ChildStarted",
    "ChildTurn",
    "Placement",
    "SubagentBudget",
    "SubagentSettings",
    "Supervisor",
    "children_provider",
    "inspect_prompt",
    "inspect_tools",
]
