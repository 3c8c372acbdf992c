"""The run pages' HTML: Jinja templates with every value escaped.

Jinja with autoescape on makes escaping the default: a value reaches the page
as text unless a template says otherwise, and none does for anything a
model, a tool or a user wrote. Model text is shown as preformatted text,
never as Markdown or links, so `<script>`, `</details>` or a `javascript:`
URL in a transcript stays the characters it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from bot.runs.view import Header, Limit, Shown

# How much of a tool call's arguments its one line shows.
_BRIEF = 120


def duration(seconds: float) -> str:
    """`42s`, `4m 05s`, `1h 02m` (the script's elapsed() counts alike)."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def money(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def tokens(header: Header) -> str:
    return token_counts(header.input_tokens, header.output_tokens)


def token_counts(input_tokens: int, output_tokens: int) -> str:
    return f"{input_tokens:,} in · {output_tokens:,} out"


def left(limit: Limit) -> str:
    """What is left of one limit, in its own unit."""
    show: Callable[[float], str]
    if limit.name in ("cost", "cost_usd"):
        show = money
    elif limit.name in ("seconds", "time"):
        show = duration
    else:
        show = "{:,.0f}".format
    return f"{show(limit.left)} left" + (f" of {show(limit.limit)}" if limit.limit else "")


def limit_name(limit: Limit) -> str:
    return {"cost_usd": "cost", "seconds": "time"}.get(limit.name, limit.name)


def when(at: float | None) -> str:
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(at: float | None) -> str:
    return "" if at is None else datetime.fromtimestamp(at, UTC).isoformat()


def pretty(value: object) -> str:
    """A tool call's arguments as indented JSON (the text is escaped where it is shown)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def brief(value: object) -> str:
    """A tool call's arguments on one line, cut to fit its summary."""
    if isinstance(value, Mapping) and len(value) == 1:
        (only,) = value.values()
        text = only if isinstance(only, str) else json.dumps(only, ensure_ascii=False)
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _BRIEF else text[: _BRIEF - 1] + "…"


def size(count: object) -> str:
    if not isinstance(count, int):
        return ""
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"


def result_status(result: Shown) -> str:
    """The summary's word on a call's result: ok or error, and how long it took."""
    data = result.data
    word = "error" if data.get("is_error") else "ok"
    took = data.get("duration_ms")
    if isinstance(took, int | float) and not isinstance(took, bool):
        word += f" · {took / 1000:.1f} s" if took >= 1000 else f" · {took:.0f} ms"
    return word


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("bot.runs", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        duration=duration,
        money=money,
        when=when,
        iso=iso,
        pretty=pretty,
        brief=brief,
        size=size,
        left=left,
        limit_name=limit_name,
    )
    env.globals.update(tokens=tokens, result_status=result_status)
    return env


ENV = _environment()
_ITEMS: Any = ENV.get_template("items.html").module


def page(name: str, **context: object) -> str:
    return ENV.get_template(name).render(**context)


def item(shown: Shown) -> str:
    """One transcript item alone, as the stream sends it."""
    return str(_ITEMS.item(shown))


def result(shown: Shown) -> str:
    """A tool call's result, for its call's slot."""
    return str(_ITEMS.result(shown))


def checklist(items: tuple[tuple[str, bool], ...]) -> str:
    return str(_ITEMS.checklist(items))
