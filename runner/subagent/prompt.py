"""The system prompt of an inspect child: investigate, report facts, change nothing."""

from __future__ import annotations

from runner.llm.types import SystemPrompt

__all__ = ["findings_prompt", "inspect_prompt", "task_message"]


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


def findings_prompt(why: str) -> str:
    """The child's last message when a budget stopped it: report what it found, without tools."""
    return (
        f"[Neo: {why}, so your investigation stops here and you cannot call tools any more."
        " Report what you found so far, as your final answer: the facts, each with its file"
        " path and line numbers, what you looked for and did not find, and what is still"
        " open.]"
    )
