"""The tools the agent acts with, and the protocol they implement."""

from runner.tools.apply_patch import ApplyPatchTool
from runner.tools.background import BashOutputTool, KillShellTool
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.bash import BashTool
from runner.tools.checklist import Checklist, ChecklistChanged, ChecklistItem, ChecklistTool
from runner.tools.edit_file import EditFileTool
from runner.tools.glob import GlobTool
from runner.tools.grep import GrepTool
from runner.tools.read_file import ReadFileTool
from runner.tools.registry import default_tools, editing_tools, patch_family, tools_for
from runner.tools.shell import ShellTool
from runner.tools.write_file import WriteFileTool

__all__ = [
    "ApplyPatchTool",
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
    "ShellTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "WriteFileTool",
    "default_tools",
    "editing_tools",
    "patch_family",
    "tools_for",
]
