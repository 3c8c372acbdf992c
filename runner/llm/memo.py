"""Wire encodings of transcript messages, remembered between calls.

A session resends its whole transcript every turn, and a message never
changes once written (messages are frozen), so an adapter encodes each one
once. Entries are keyed by the message's identity and keep the message
alive, so an id is never reused while its entry exists; the oldest entries
go first once `size` is reached. Cached encodings are shared between
requests: whoever receives them treats them as read-only, as the SDKs do
when they serialise a request.
"""

from __future__ import annotations

import threading
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
        self._entries: dict[tuple[int, Hashable], tuple[object, V]] = {}
        # Lookups are single dict reads; only additions and evictions take it.
        self._lock = threading.Lock()

    def get(self, owner: K, make: Callable[[K], V], extra: Hashable = None) -> V:
        """`make(owner)`, computed the first time `owner` (with `extra`) is asked for."""
        key = (id(owner), extra)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is owner:
            return entry[1]
        value = make(owner)
        with self._lock:
            self._entries[key] = (owner, value)
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return value

    def __len__(self) -> int:
        return len(self._entries)
