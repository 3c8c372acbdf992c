"""Wire encodings of transcript messages, remembered between calls.

A session resends its whole transcript every turn, and a message never
changes once written (messages are frozen), so an adapter encodes each one
once. Most owners are found by identity: one that can be weakly referenced
takes its entry with it when it goes, any other is kept alive by its entry,
so its id is never reused while the entry exists. The agent loop hands
adapters a fresh copy of every message holding tool calls or replay data
(`runner.agent.copying`), so assistant messages are found by value: a cheap
signature picks the entry, and full equality with the message it was made
for confirms it. Past `size` entries of a kind the oldest go first. Cached
encodings are shared between requests: whoever receives them treats them as
read-only, as the SDKs do when they serialise a request.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from runner.llm import types as llm

__all__ = ["Memo"]

_SIZE = 4096
K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[V]):
    """Values computed from an object, looked up by its identity or, for a
    copied message, by its value."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._by_id: dict[tuple[int, Hashable], tuple[Callable[[], object], V]] = {}
        self._by_value: dict[tuple[Hashable, Hashable], tuple[llm.Message, V]] = {}
        # Keys whose owners have gone. A weakref callback may run anywhere,
        # even while the lock is held, so it only notes the key (an atomic
        # append); the next addition drops the entry.
        self._gone: list[tuple[int, Hashable]] = []
        # Lookups are single dict reads; only additions take it.
        self._lock = threading.Lock()

    def get(self, owner: K, make: Callable[[K], V], extra: Hashable = None) -> V:
        """`make(owner)`, computed the first time `owner` (with `extra`) is asked for."""
        key = (id(owner), extra)
        entry = self._by_id.get(key)
        if entry is not None and entry[0]() is owner:
            return entry[1]
        if isinstance(owner, llm.Message) and owner.role == "assistant":
            return self._get_by_value(owner, make, extra)
        value = make(owner)
        try:
            held: Callable[[], object] = weakref.ref(owner, lambda _: self._gone.append(key))
        except TypeError:
            held = _Strong(owner)
        with self._lock:
            self._drop_gone()
            self._by_id[key] = (held, value)
            _trim(self._by_id, self._size)
        return value

    def _get_by_value(self, owner: K, make: Callable[[K], V], extra: Hashable) -> V:
        message = owner
        assert isinstance(message, llm.Message)
        key = (_signature(message), extra)
        entry = self._by_value.get(key)
        if entry is not None and entry[0] == message:
            return entry[1]
        value = make(owner)
        with self._lock:
            self._by_value[key] = (message, value)
            _trim(self._by_value, self._size)
        return value

    def _drop_gone(self) -> None:
        while self._gone:
            key = self._gone.pop()
            entry = self._by_id.get(key)
            # The id may already belong to a newer owner with its own entry.
            if entry is not None and entry[0]() is None:
                del self._by_id[key]

    def __len__(self) -> int:
        return len(self._by_id) + len(self._by_value)


def _signature(message: llm.Message) -> Hashable:
    # Strings hash once and keep their hash, and copies share them.
    parts: list[Hashable] = [message.role]
    for block in message.content:
        if isinstance(block, llm.Text):
            parts.append(block.text)
        elif isinstance(block, llm.ToolUse):
            parts.append((block.id, block.name, block.freeform))
        elif isinstance(block, llm.Opaque):
            parts.append((block.provider, block.kind))
        elif isinstance(block, llm.ToolResult):
            parts.append(block.tool_use_id)
        else:
            parts.append(block.data)
    return tuple(parts)


def _trim(entries: dict[K, V], size: int) -> None:
    while len(entries) > size:
        del entries[next(iter(entries))]


class _Strong:
    """A reference that keeps its object alive, for owners weakref cannot track."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __call__(self) -> object:
        return self._value
