"""The built-in tools for one sandbox."""

from __future__ import annotations

from runner.sandbox.base import Sandbox
from runner.tools.background import BashOutputTool, KillShellTool
from runner.tools.base import Tool
from runner.tools.bash import BashTool
from runner.tools.checklist import Checklist, ChecklistTool
from runner.tools.edit_file import EditFileTool
from runner.tools.glob import GlobTool
from runner.tools.grep import GrepTool
from runner.tools.read_file import ReadFileTool
from runner.tools.write_file import WriteFileTool


def default_tools(sandbox: Sandbox, *, checklist: Checklist | None = None) -> list[Tool]:
    """Every built-in tool acting on `sandbox`; `checklist` adds the checklist tool."""
    tools: list[Tool] = [
        ReadFileTool(sandbox),
        WriteFileTool(sandbox),
        EditFileTool(sandbox),
        BashTool(sandbox),
        BashOutputTool(sandbox),
        KillShellTool(sandbox),
        GrepTool(sandbox),
        GlobTool(sandbox),
    ]
    if checklist is not None:
        tools.append(ChecklistTool(checklist))
    return tools
