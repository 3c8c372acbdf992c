"""What the model is told about its task's surroundings: AGENTS.md and the system prompt."""

from runner.context.agents_md import find_git_root, project_context
from runner.context.prompt import BASE_PROMPT, Environment, build_system_prompt
from runner.context.setup_facts import NetworkAccess

__all__ = [
    "BASE_PROMPT",
    "Environment",
    "NetworkAccess",
    "build_system_prompt",
    "find_git_root",
    "project_context",
]
