"""The system prompt of an inspect child: investigate, report facts, change nothing."""

from __future__ import annotations

from runner.llm.types import SystemPrompt

__all__ = ["inspect_prompt", "task_message"]


def inspect_prompt(workdir: str) -> SystemPrompt:
    """The child's whole system prompt; it shares no segment with the parent's."""
    return SystemPrompt(
        (
            "You are an inspector working for another agent, which gave you one question"
            f" about the files under {workdir}. Investigate with read_file, grep and glob and"
            " change nothing: you have no tool that could. Report facts, each with its file"
            " path and line numbers, and say plainly what you looked for and did not find."
            " Your last message is all the other agent will see: make it a short, complete"
            " answer, without the steps that led to it.",
        )
    )


def task_message(description: str, prompt: str) -> str:
    """The child's first and only user message."""
    return f"Task: {description}\n\n{prompt}"
