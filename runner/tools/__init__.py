"""The tools the agent acts with, and the protocol they implement."""

from runner.tools.background import BashOutputTool, KillShellTool
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.bash import BashTool
from runner.tools.checklist import Checklist, ChecklistChanged, ChecklistItem, ChecklistTool
from runner.tools.edit_file import EditFileTool
from runner.tools.glob import GlobTool
from runner.tools.grep import GrepTool
from runner.tools.read_file import ReadFileTool
from runner.tools.registry import default_tools
from runner.tools.write_file import WriteFileTool

__all__ = [
    "BashOutputTool",
    "BashTool",
    "Checklist",
    "ChecklistChanged",
    "ChecklistItem",
    "ChecklistTool",
    "EditFileTool",
    "GlobTool",
    "GrepTool",
    "KillShellTool",
    "ReadFileTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "WriteFileTool",
    "default_tools",
]
