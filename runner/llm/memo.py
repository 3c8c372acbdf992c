"""Wire encodings of transcript messages, remembered between calls.

A session resends its whole transcript every turn, and a message never
changes once written (messages are frozen), so an adapter encodes each one
once. Entries are keyed by the owner's identity. An owner that can be
weakly referenced (a message) takes its entry with it when it goes; any
other is kept alive by its entry, so its id is never reused while the entry
exists. Past `size` entries the oldest go first. Cached encodings are shared
between requests: whoever receives them treats them as read-only, as the
SDKs do when they serialise a request.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

_SIZE = 4096
K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[V]):
    """Values computed from an object, looked up by the object's identity."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._entries: dict[tuple[int, Hashable], tuple[Callable[[], object], V]] = {}
        # Keys whose owners have gone. A weakref callback may run anywhere,
        # even while the lock is held, so it only notes the key (an atomic
        # append); the next addition drops the entry.
        self._gone: list[tuple[int, Hashable]] = []
        # Lookups are single dict reads; only additions take it.
        self._lock = threading.Lock()

    def get(self, owner: K, make: Callable[[K], V], extra: Hashable = None) -> V:
        """`make(owner)`, computed the first time `owner` (with `extra`) is asked for."""
        key = (id(owner), extra)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is owner:
            return entry[1]
        value = make(owner)
        try:
            held: Callable[[], object] = weakref.ref(owner, lambda _: self._gone.append(key))
        except TypeError:
            held = _Strong(owner)
        with self._lock:
            self._drop_gone()
            self._entries[key] = (held, value)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return value

    def _drop_gone(self) -> None:
        while self._gone:
            key = self._gone.pop()
            entry = self._entries.get(key)
            # The id may already belong to a newer owner with its own entry.
            if entry is not None and entry[0]() is None:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)


class _Strong:
    """A reference that keeps its object alive, for owners weakref cannot track."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __call__(self) -> object:
        return self._value
