"""The built-in tools for one sandbox, as the model's family was trained to use them."""

from __future__ import annotations

import re

from runner.sandbox.base import Sandbox
from runner.tools.apply_patch import ApplyPatchTool
from runner.tools.background import BashOutputTool, KillShellTool
from runner.tools.base import Tool
from runner.tools.bash import BashTool
from runner.tools.checklist import Checklist, ChecklistTool
from runner.tools.edit_file import EditFileTool
from runner.tools.glob import GlobTool
from runner.tools.grep import GrepTool
from runner.tools.read_file import ReadFileTool
from runner.tools.shell import ShellTool
from runner.tools.write_file import WriteFileTool

__all__ = ["default_tools", "editing_tools", "patch_family", "tools_for"]

# OpenAI's GPT-5 and codex models, and the o-series, learnt to edit with
# apply_patch and to run argv lists; a provider prefix ("openai/") may come first.
_PATCH_FAMILY = re.compile(r"(?:^|/)(?:gpt-5|o[1-9](?![\w.]))|codex", re.IGNORECASE)


def patch_family(model: str) -> bool:
    """Whether `model` is of the family trained on apply_patch and shell."""
    return _PATCH_FAMILY.search(model) is not None


def editing_tools(model: str) -> tuple[str, str]:
    """The names of the tools `model` edits files and runs commands with."""
    return ("apply_patch", "shell") if patch_family(model) else ("edit_file", "bash")


def tools_for(model: str, sandbox: Sandbox, *, checklist: Checklist | None = None) -> list[Tool]:
    """The built-in tools for `model` acting on `sandbox`; `checklist` adds the checklist tool."""
    if not patch_family(model):
        return default_tools(sandbox, checklist=checklist)
    tools: list[Tool] = [
        ReadFileTool(sandbox),
        ApplyPatchTool(sandbox),
        ShellTool(sandbox),
        BashOutputTool(sandbox),
        KillShellTool(sandbox),
        GrepTool(sandbox),
        GlobTool(sandbox),
    ]
    if checklist is not None:
        tools.append(ChecklistTool(checklist))
    return tools


def default_tools(sandbox: Sandbox, *, checklist: Checklist | None = None) -> list[Tool]:
    """Every built-in tool of the default set (Claude's) acting on `sandbox`."""
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
