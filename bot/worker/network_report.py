"""The report's word on the network: the hosts Neo's egress proxy refused, and the two fixes.

Pure. Hosts and commands come from what the model ran, so they are shown as
code, through the report's own `code` span, which nothing can break out of.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runner.network import Blocked
from runner.network.accesses import UNKNOWN_COMMAND
from runner.text import one_line

__all__ = ["MAX_BLOCKED_SHOWN", "blocked_lines"]

# Hosts listed one per line; the rest are counted.
MAX_BLOCKED_SHOWN = 20
_COMMAND_CHARS = 120


def blocked_lines(
    blocked: Sequence[Blocked], *, config_path: str, code: Callable[[str], str]
) -> list[str]:
    """The report's section on refused hosts: each once, with the command that tried."""
    if not blocked:
        return []
    count = len(blocked)
    noun = "host" if count == 1 else "hosts"
    lines = [f"**Blocked by the network policy:** Neo's proxy refused {count} {noun}."]
    for entry in blocked[:MAX_BLOCKED_SHOWN]:
        lines.append(f"- {code(entry.host)}{_why(entry)}, by {_by(entry.command, code)}")
    if count > MAX_BLOCKED_SHOWN:
        lines.append(f"- … and {count - MAX_BLOCKED_SHOWN} more")
    # A paragraph of its own: a line right after a list item would join that item.
    lines.append("")
    lines.append(
        f"To let the agent reach a host, add it to `network.allow` in {code(config_path)} on"
        " the default branch; or move the step that needs it into `setup`, which reaches"
        " public hosts before the agent starts."
    )
    return lines


def _by(command: str, code: Callable[[str], str]) -> str:
    """The command, as code; Neo's own words when no command owned the connection."""
    if command == UNKNOWN_COMMAND:
        return UNKNOWN_COMMAND
    return code(one_line(command, _COMMAND_CHARS))


def _why(entry: Blocked) -> str:
    when = " during setup" if entry.phase == "setup" else ""
    if entry.reason == "method":
        return f"{when} (a method `network.methods: read` does not allow: set it to `all`)"
    if entry.reason == "address":
        return (
            f"{when} (its address is private or local: only the operator's `NEO_NETWORK` can"
            " open it)"
        )
    return when
