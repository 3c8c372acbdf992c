"""A simple, honest model of prompt caching for the fakes.

Prompts are compared as the fakes count them: their JSON text, about four
characters a token. `PrefixCache` models automatic caching (OpenAI, Chat
Completions servers, Gemini): a request reads from the cache the longest
prefix it shares with an earlier request under the same key. `BreakpointCache`
models Anthropic's explicit caching: a prefix ending at a `cache_control`
breakpoint is written, and a later request whose text begins with a written
prefix (ending at any of its block boundaries) reads it; `cache_control`
itself is not part of what is compared.

Real services cache in blocks, only past a minimum length, and for minutes;
these models do none of that. They show whether a client keeps its prompt's
prefix byte-identical from one call to the next, not what a bill would say.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BreakpointCache", "CacheUse", "PrefixCache", "common_prefix", "pieces", "tokens"]

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
    """A request's prompt tokens: read from the cache, written to it, and the rest."""

    read: int
    written: int
    uncached: int


class BreakpointCache:
    """Anthropic's caching: prefixes written at breakpoints, read by later requests."""

    def __init__(self) -> None:
        self._written: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def use(self, key: str, request: Mapping[str, Any]) -> CacheUse:
        """How `request` (a Messages API body) uses the cache under `key`."""
        boundaries: list[tuple[int, str, bool]] = []  # (end offset, digest, breakpoint)
        digest = hashlib.sha256()
        length = 0
        for piece, marked in pieces(request):
            digest.update(piece.encode())
            length += len(piece)
            boundaries.append((length, digest.hexdigest(), marked))
        with self._lock:
            written = self._written.setdefault(key, set())
            read = max((end for end, d, _ in boundaries if d in written), default=0)
            last_mark = max((end for end, _, marked in boundaries if marked), default=0)
            written.update(d for _, d, marked in boundaries if marked)
        wrote = max(0, last_mark - read)
        return CacheUse(tokens(read), tokens(wrote), tokens(length) - tokens(read) - tokens(wrote))


def pieces(request: Mapping[str, Any]) -> Iterable[tuple[str, bool]]:
    """The prompt in cache order (tools, system, messages), a block at a time,
    each with whether it carries a breakpoint."""
    for tool in request.get("tools") or ():
        yield _block(tool)
    system = request.get("system")
    if isinstance(system, str):
        yield json.dumps(system), False
    else:
        for block in system or ():
            yield _block(block)
    for message in request.get("messages") or ():
        yield f"<{message.get('role')}>", False
        content = message.get("content")
        if isinstance(content, str):
            yield json.dumps(content), False
            continue
        for block in _as_list(content):
            yield _block(block)


def _block(block: Mapping[str, Any]) -> tuple[str, bool]:
    marked = block.get("cache_control") is not None
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(bare), marked


def _as_list(value: object) -> Sequence[Mapping[str, Any]]:
    return value if isinstance(value, list) else []
