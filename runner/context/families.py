"""A short segment of the system prompt for each model family.

Families learnt different tools and different habits: OpenAI's GPT-5 and
o-series models edit with apply_patch and run argv lists, Claude edits exact
strings, Gemini tends to write code into its message rather than call a tool.
Each gets a few lines on using its tools well, chosen by the model's name as
its tools are (`runner.tools.registry`); a model of no known family gets none.
The segment never changes during a run, so it sits in the cached prefix.
"""

from __future__ import annotations

from typing import Final, Literal

from runner.tools.registry import patch_family

__all__ = ["Family", "family_of", "family_segment"]

Family = Literal["openai", "claude", "gemini", "other"]

_OPENAI: Final = """\
# Your tools

- Edit with apply_patch: one call can add, update, move and delete several \
files. Write the patch itself, from `*** Begin Patch` to `*** End Patch`; open \
each hunk with its `@@` line and keep about three unchanged lines around each \
change. Do not edit files through shell (sed -i, cat <<EOF, python -c).
- shell takes an argv list; put pipes, redirections and && inside \
["bash", "-lc", "..."]. Read files with read_file and search with grep and \
glob rather than cat, rg or find.
- Keep going until the task is done: do not stop to offer options or to ask \
whether to continue. Between tool calls, one sentence on what comes next is \
enough.
- Write the final message as plain Markdown for a reviewer: short paragraphs \
or bullets, file paths in backticks, no code blocks repeating the diff."""

_CLAUDE: Final = """\
# Your tools

- edit_file replaces one exact string: copy old_string from read_file's \
output without the line-number prefix, with enough surrounding lines to make \
it unique. Use write_file only for a new file or a whole rewrite.
- Read a file before you edit it, and again after an edit fails, rather than \
guessing at its contents.
- Run commands with bash; search with grep and glob rather than find or grep \
in bash.
- Do not narrate each step: between tool calls, a sentence when it helps."""

_GEMINI: Final = """\
# Your tools

- Make every change through the tools: code written in your message changes \
nothing. Edit with edit_file (old_string copied exactly from read_file's \
output, without the line-number prefix, enough lines to be unique) and create \
files with write_file.
- Call the tool you need rather than describing what you would do. When a \
call fails, read its error and correct the call instead of repeating it.
- Run commands with bash; search with grep and glob."""

_SEGMENTS: Final[dict[Family, str]] = {
    "openai": _OPENAI,
    "claude": _CLAUDE,
    "gemini": _GEMINI,
    "other": "",
}


def family_of(model: str) -> Family:
    """The family `model` belongs to, from its name (a provider prefix may come first)."""
    if patch_family(model):
        return "openai"
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("claude"):
        return "claude"
    if name.startswith("gemini"):
        return "gemini"
    return "other"


def family_segment(model: str) -> str:
    """The system prompt's segment for `model`'s family; empty for an unknown one."""
    return _SEGMENTS[family_of(model)]
