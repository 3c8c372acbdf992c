"""A simple, honest model of prompt caching for the fakes.

Prompts are compared as the fakes count them: their JSON text, about four
characters a token. `PrefixCache` models automatic caching (OpenAI, Chat
Completions servers, Gemini): a request reads from the cache the longest
prefix it shares with an earlier request under the same key. `BreakpointCache`
models Anthropic's explicit caching: a prefix ending at a `cache_control`
breakpoint is written, and a later request whose text begins with a written
prefix (ending at any of its block boundaries) reads it; `cache_control`
itself is not part of what is compared.

Real services cache in blocks and only past a minimum length; these models
do neither. They show whether a client keeps its prompt's prefix
byte-identical from one call to the next and, for Anthropic given a clock,
what its cache's expiry costs (`bench/prompt_cache.py --gaps`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TTL_SECONDS",
    "BreakpointCache",
    "CacheUse",
    "PrefixCache",
    "breakpoint_ttls",
    "common_prefix",
    "pieces",
    "pieces_with_ttl",
    "tokens",
]

CHARS_PER_TOKEN = 4


def tokens(chars: int) -> int:
    return chars // CHARS_PER_TOKEN


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    # Bisection over slice comparisons, which run in C: long prompts stay cheap.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class PrefixCache:
    """Automatic prefix caching: what this prompt shares with an earlier one."""

    def __init__(self) -> None:
        self._prompts: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def read(self, key: str, prompt: str) -> int:
        """Cached tokens of `prompt` under `key`; the prompt is then cached too."""
        with self._lock:
            earlier = self._prompts.setdefault(key, [])
            shared = max((common_prefix(prompt, p) for p in earlier), default=0)
            earlier.append(prompt)
        return tokens(shared)


@dataclass(frozen=True, slots=True)
class CacheUse:
    """A request's prompt tokens: read from the cache, written to it, and the rest.

    `written` counts every write; `written_1h` those to one-hour entries.
    """

    read: int
    written: int
    uncached: int
    written_1h: int = 0


# An entry's life after it was written or last read, by its cache_control ttl.
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class BreakpointCache:
    """Anthropic's caching: prefixes written at breakpoints, read by later requests.

    With a `clock`, entries expire as the API's do: five minutes (or an hour,
    `"ttl": "1h"`) after they were written or last read; reading refreshes an
    entry for its own ttl. Without one, nothing expires. Writes are counted as
    the API bills them: from the longest prefix read to the last one-hour
    breakpoint at the one-hour rate, and on to the last breakpoint at five
    minutes'.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        # key -> prefix digest -> (expiry, ttl in seconds)
        self._written: dict[str, dict[str, tuple[float, float]]] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def use(self, key: str, request: Mapping[str, Any]) -> CacheUse:
        """How `request` (a Messages API body) uses the cache under `key`."""
        boundaries: list[tuple[int, str, float | None]] = []  # (end offset, digest, ttl)
        digest = hashlib.sha256()
        length = 0
        for piece, ttl in pieces_with_ttl(request):
            digest.update(piece.encode())
            length += len(piece)
            boundaries.append((length, digest.hexdigest(), ttl))
        now = self._clock() if self._clock is not None else 0.0
        with self._lock:
            written = self._written.setdefault(key, {})
            live = {
                d: entry for d, entry in written.items() if self._clock is None or entry[0] > now
            }
            hits = [(end, d) for end, d, _ in boundaries if d in live]
            read, hit = max(hits, default=(0, ""))
            if hit:  # the entry read is refreshed for its own life
                written[hit] = (now + live[hit][1], live[hit][1])
            marks = [(end, d, ttl) for end, d, ttl in boundaries if ttl is not None]
            last_mark = max((end for end, _, _ in marks), default=0)
            last_hour = max((end for end, _, ttl in marks if ttl == TTL_SECONDS["1h"]), default=0)
            for end, d, ttl in marks:
                if d in live:  # a hit: refreshed for its own life
                    written[d] = (now + live[d][1], live[d][1])
                elif end > read:
                    written[d] = (now + ttl, ttl)
        hour = max(0, tokens(last_hour) - tokens(read)) if last_hour > read else 0
        wrote = max(0, tokens(last_mark) - tokens(read)) if last_mark > read else 0
        return CacheUse(tokens(read), wrote, tokens(length) - tokens(read) - wrote, written_1h=hour)


def pieces_with_ttl(request: Mapping[str, Any]) -> Iterable[tuple[str, float | None]]:
    """`pieces`, each with its breakpoint's life in seconds (None: no breakpoint)."""
    for piece, control in _pieces(request):
        yield piece, None if control is None else _ttl(control)


def breakpoint_ttls(request: Mapping[str, Any]) -> Iterable[float]:
    """The life of each of the request's breakpoints, in cache order: those of
    `pieces_with_ttl`, without rendering the pieces (a check of every request
    that would otherwise serialize the whole prompt)."""
    for _, control in _pieces(request, render=False):
        if control is not None:
            yield _ttl(control)


def _ttl(control: Mapping[str, Any]) -> float:
    # An unknown ttl is -1: the fake API refuses the request before any cache use.
    return TTL_SECONDS.get(str(control.get("ttl", "5m")), -1.0)


def pieces(request: Mapping[str, Any]) -> Iterable[tuple[str, bool]]:
    """The prompt in cache order (tools, system, messages), a block at a time,
    each with whether it carries a breakpoint."""
    for piece, control in _pieces(request):
        yield piece, control is not None


def _pieces(
    request: Mapping[str, Any], *, render: bool = True
) -> Iterable[tuple[str, Mapping[str, Any] | None]]:
    # `render=False` walks the same blocks in the same order, every piece "".
    dumps = json.dumps if render else _unrendered
    for tool in request.get("tools") or ():
        yield _block(tool, dumps)
    system = request.get("system")
    if isinstance(system, str):
        yield dumps(system), None
    else:
        for block in system or ():
            yield _block(block, dumps)
    for message in request.get("messages") or ():
        yield f"<{message.get('role')}>", None
        content = message.get("content")
        if isinstance(content, str):
            yield dumps(content), None
            continue
        for block in _as_list(content):
            yield _block(block, dumps)


def _unrendered(value: object) -> str:
    return ""


def _block(
    block: Mapping[str, Any], dumps: Callable[[object], str]
) -> tuple[str, Mapping[str, Any] | None]:
    control = block.get("cache_control")
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    return dumps(bare), control if isinstance(control, Mapping) else None


def _as_list(value: object) -> Sequence[Mapping[str, Any]]:
    return value if isinstance(value, list) else []
