"""A job's event log as `neo jobs logs` prints it in a terminal. Pure.

One line per record, each starting with its UTC time; a tool call shows its
arguments, its result the first lines of its output; the model's text as it
came, its chunks joined. Every character a run produced is printable: control
characters are escaped, so the log cannot drive the operator's terminal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from bot.queue import RunEvent

__all__ = ["OUTPUT_LINES", "TextLog"]

# Lines of a tool's output shown under its call.
OUTPUT_LINES = 12
_INDENT = "    "


class TextLog:
    """Records in, text out; it remembers whether the model's text is mid-way."""

    def __init__(self) -> None:
        self._in_text = False

    def render(self, event: RunEvent) -> str:
        """What to print for `event` (possibly part of a line: the model's text)."""
        if event.kind == "text":
            return self._text(event)
        ended = "\n" if self._in_text else ""
        self._in_text = False
        return ended + "\n".join(self._lines(event)) + "\n"

    def end(self) -> str:
        """What ends the output: the last text's line break."""
        ended = "\n" if self._in_text else ""
        self._in_text = False
        return ended

    def _text(self, event: RunEvent) -> str:
        text = _printable(str(event.data.get("text", "")), keep_lines=True)
        lines = text.split("\n")
        shown = "\n".join(lines[:1] + [_INDENT + line for line in lines[1:]])
        if self._in_text:  # the same message goes on
            return shown
        self._in_text = True
        return f"{_time(event.at)}  {shown}"

    def _lines(self, event: RunEvent) -> list[str]:
        data = event.data
        head = f"{_time(event.at)}  "
        kind = event.kind
        if kind == "state":
            line = f"{head}── {_str(data.get('state'))}"
            if data.get("conclusion"):
                line += f": {_str(data['conclusion'])}"
            if data.get("error"):
                line += f" ({_str(data['error'])})"
            return [line]
        if kind == "tool_call":
            args = json.dumps(data.get("args", {}), ensure_ascii=False)
            return [f"{head}▶ {_str(data.get('name'))} {_printable(args)}"]
        if kind == "tool_result":
            return self._result(head, data)
        if kind == "turn":
            return [head + _turn(data)]
        if kind == "thinking":
            return [f"{head}(thinking) {_printable(str(data.get('text', '')))}"]
        if kind == "checklist":
            items = data.get("items")
            lines = [f"{head}checklist"]
            for item in items if isinstance(items, list) else []:
                if isinstance(item, Mapping):
                    mark = "x" if item.get("done") else " "
                    lines.append(f"{_INDENT}[{mark}] {_str(item.get('text'))}")
            return lines
        if kind == "compaction":
            return [
                f"{head}compacted the conversation ({_str(data.get('stage'))}:"
                f" {_int(data.get('tokens_before')):,} → {_int(data.get('tokens_after')):,} tokens)"
            ]
        if kind == "subagent":
            inner = data.get("event")
            inner = inner if isinstance(inner, Mapping) else {}
            what = _str(inner.get("kind"))
            description = f" {_str(data['description'])}" if data.get("description") else ""
            details = inner.get("data")
            extra = f" {_printable(json.dumps(details))}" if details else ""
            return [f"{head}subagent {_str(data.get('agent'))} {what}{description}{extra}"]
        if kind == "network_blocked":
            return [
                f"{head}⊘ the proxy refused {_str(data.get('host'))}"
                f" ({_str(data.get('reason'))}) · {_str(data.get('command'))}"
            ]
        if kind == "steer":
            return [f"{head}@{_str(data.get('author'))} steers: {_str(data.get('text'))}"]
        if kind == "stop":
            return [f"{head}stopped by @{_str(data.get('by'))}"]
        if kind == "truncated":
            return [
                f"{head}… {_int(data.get('dropped')):,} more events were not kept"
                f" ({_printable(json.dumps(data.get('kinds', {})))})"
            ]
        return [f"{head}{_str(kind)} {_printable(json.dumps(data, ensure_ascii=False))}"]

    def _result(self, head: str, data: Mapping[str, object]) -> list[str]:
        status = "error" if data.get("is_error") else "ok"
        seconds = _int(data.get("duration_ms")) / 1000
        size = f"{_int(data.get('output_bytes')):,} bytes"
        cut = ", cut" if data.get("truncated") else ""
        lines = [f"{head}◀ {_str(data.get('name'))} {status} {seconds:.1f}s ({size}{cut})"]
        output = _printable(str(data.get("output", "")), keep_lines=True).rstrip("\n")
        if output:
            shown = output.split("\n")
            lines += [_INDENT + line for line in shown[:OUTPUT_LINES]]
            if len(shown) > OUTPUT_LINES:
                lines.append(f"{_INDENT}… {len(shown) - OUTPUT_LINES} more lines")
        return lines


def _turn(data: Mapping[str, object]) -> str:
    line = (
        f"turn {_str(data.get('turn'))} · {_int(data.get('input_tokens')):,} in /"
        f" {_int(data.get('output_tokens')):,} out tokens"
    )
    cost = data.get("cost_usd")
    if isinstance(cost, int | float):
        line += f" · ${cost:.4f}"
    limits = data.get("limits")
    if isinstance(limits, Mapping) and limits:
        left = []
        if "turns" in limits:
            left.append(f"{_int(limits['turns'])} turns")
        if isinstance(limits.get("cost_usd"), int | float):
            left.append(f"${limits['cost_usd']:.2f}")
        if isinstance(limits.get("seconds"), int | float):
            left.append(f"{limits['seconds']:.0f}s")
        line += " · left: " + ", ".join(left)
    return line


def _time(at: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(at))


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _str(value: object) -> str:
    return _printable("" if value is None else str(value))


def _printable(text: str, *, keep_lines: bool = False) -> str:
    """`text` with control characters escaped (line breaks kept if `keep_lines`)."""
    return "".join(
        char
        if char.isprintable() or (keep_lines and char == "\n")
        else char.encode("unicode_escape").decode("ascii")
        for char in text
    )
