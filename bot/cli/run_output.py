"""How `neo run` reports: text for people, JSON lines for programs."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any, Protocol, TextIO

from rich.console import Console
from rich.markup import escape

from bot.worker.progress import INTERNAL_TOOLS
from runner.agent import Event, ProviderRetry, ToolFinished, ToolNotice, ToolStarted
from runner.headless import RunResult
from runner.llm.codec import message_to_json
from runner.llm.types import JSON, Message
from runner.text import one_line
from runner.tools import ChecklistChanged

OUTPUT_FORMATS = ("text", "json", "stream-json")


class Output(Protocol):
    def event(self, event: Event) -> None: ...
    def finish(self, result: RunResult) -> None: ...


def make_output(fmt: str, stdout: TextIO | None = None, stderr: TextIO | None = None) -> Output:
    out = stdout or sys.stdout
    if fmt == "json":
        return JsonOutput(out)
    if fmt == "stream-json":
        return StreamJsonOutput(out)
    return TextOutput(out, Console(file=stderr or sys.stderr, highlight=False, soft_wrap=True))


class JsonOutput:
    """One result object on the last line of stdout."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def event(self, event: Event) -> None:
        pass

    def finish(self, result: RunResult) -> None:
        _write_line(self._out, result.to_json())


class StreamJsonOutput(JsonOutput):
    """Every event as it happens, one JSON object a line, the result last."""

    def event(self, event: Event) -> None:
        _write_line(self._out, event_to_json(event))


class TextOutput:
    """A one-line receipt per tool call on stderr; the answer on stdout."""

    def __init__(self, out: TextIO, console: Console) -> None:
        self._out = out
        self._console = console
        self._calls: dict[str, str] = {}

    def event(self, event: Event) -> None:
        if isinstance(event, ToolStarted | ToolFinished) and event.name in INTERNAL_TOOLS:
            return  # the checklist has its own line, below; it is no work on the tree
        if isinstance(event, ToolStarted):
            self._calls[event.call_id] = _summary(event.args)
        elif isinstance(event, ToolFinished):
            mark = "[red]✗[/]" if event.is_error else "[green]✓[/]"
            subject = escape(self._calls.pop(event.call_id, ""))
            detail = one_line(event.output, 80) if event.is_error else _size(event.output_bytes)
            self._console.print(
                f"{mark} [bold]{event.name}[/] {subject} [dim]· {escape(detail)} · "
                f"{event.duration_ms / 1000:.1f}s[/]"
            )
        elif isinstance(event, ProviderRetry) and event.fallback:
            self._console.print(
                f"[yellow]↻[/] falling back to {escape(event.fallback)}: {escape(event.reason)}"
            )
        elif isinstance(event, ProviderRetry):
            self._console.print(
                f"[yellow]↻[/] retrying in {event.delay:.1f}s: {escape(event.reason)}"
            )
        elif isinstance(event, ToolNotice) and isinstance(event.payload, ChecklistChanged):
            items = event.payload.items
            done = sum(1 for item in items if item.status == "done")
            current = next((i.content for i in items if i.status == "in_progress"), "")
            suffix = f": {escape(current)}" if current else ""
            self._console.print(f"[cyan]☰[/] checklist {done}/{len(items)} done{suffix}")

    def finish(self, result: RunResult) -> None:
        if result.result:
            self._out.write(result.result.rstrip("\n") + "\n")
            self._out.flush()
        for blocked in result.blocked or ():
            why = {"method": " (method)", "address": " (private address)"}.get(blocked.reason, "")
            self._console.print(
                f"[yellow]⊘[/] the proxy refused [bold]{escape(blocked.host)}[/]{why}"
                f" [dim]· {escape(one_line(blocked.command, 80))}[/]"
            )
        if result.blocked:
            self._console.print("[dim]  allow a host with --network (and NEO_NETWORK)[/]")
        if result.is_error:
            self._console.print(f"[red]neo: error:[/] {escape(result.error_message or '')}")
        cost = f" · ${result.cost_usd:.4f}" if result.cost_usd is not None else ""
        for model, calls in result.unpriced:
            cost += f" · {calls} call{'s' if calls != 1 else ''} of {escape(model)} not priced"
        self._console.print(
            f"[dim]{result.model_calls} model calls · {result.usage.input_tokens:,} in / "
            f"{result.usage.output_tokens:,} out tokens{cost} · "
            f"{result.duration_ms / 1000:.1f}s · session {result.session_id}[/]"
        )


def event_to_json(event: Event) -> dict[str, JSON]:
    """An event as a JSON object whose `type` is the event's snake_case name."""
    data: dict[str, JSON] = {"type": _snake(type(event).__name__)}
    for field in dataclasses.fields(event):
        data[field.name] = _jsonable(getattr(event, field.name))
    if isinstance(event, ToolNotice):
        data["payload_type"] = _snake(type(event.payload).__name__)
    return data


def _jsonable(value: Any) -> JSON:
    if isinstance(value, Message):
        return message_to_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _write_line(out: TextIO, obj: dict[str, JSON]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _summary(args: dict[str, JSON]) -> str:
    for key in ("command", "path", "pattern", "description"):
        value = args.get(key)
        if isinstance(value, str):
            return one_line(value, 80)
    return ""


def _size(count: int) -> str:
    return f"{count:,} bytes" if count < 10_000 else f"{count / 1024:,.0f} KiB"
