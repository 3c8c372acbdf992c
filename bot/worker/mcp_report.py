"""The report's and the progress comment's word on MCP: the servers left out and why,
the MCP tools the agent called and how often. Pure.

A server's reason may quote what the server said (its stderr's last line),
so it is shown as code, through the caller's `code` span, on one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runner.mcp.report import McpReport, Skipped
from runner.text import one_line

__all__ = ["MAX_SHOWN", "mcp_lines", "skipped_lines", "used_line"]

# Servers or tools listed one by one; the rest are counted.
MAX_SHOWN = 20
_REASON_CHARS = 300


def skipped_lines(skipped: Sequence[Skipped], *, code: Callable[[str], str]) -> list[str]:
    """The servers the job goes without, each with why."""
    if not skipped:
        return []
    count = len(skipped)
    noun = "server" if count == 1 else "servers"
    lines = [f"**MCP {noun} left out:** the job went on without {'it' if count == 1 else 'them'}."]
    lines.extend(
        f"- {code(entry.server)}: {code(one_line(entry.reason, _REASON_CHARS))}"
        for entry in skipped[:MAX_SHOWN]
    )
    if count > MAX_SHOWN:
        lines.append(f"- … and {count - MAX_SHOWN} more")
    return lines


def used_line(calls: Sequence[tuple[str, int]], *, code: Callable[[str], str]) -> str | None:
    """The MCP tools called, most called first, with how many times."""
    if not calls:
        return None
    shown = ", ".join(f"{code(name)} ×{count}" for name, count in calls[:MAX_SHOWN])
    more = f", and {len(calls) - MAX_SHOWN} more" if len(calls) > MAX_SHOWN else ""
    return f"**MCP tools used:** {shown}{more}"


def mcp_lines(report: McpReport, *, code: Callable[[str], str]) -> list[str]:
    """The report's MCP section: tools used, then servers left out; nothing when neither."""
    sections: list[str] = []
    used = used_line(report.calls, code=code)
    if used is not None:
        sections.append(used)
    skipped = skipped_lines(report.skipped, code=code)
    if skipped:
        sections.append("\n".join(skipped))
    return sections
