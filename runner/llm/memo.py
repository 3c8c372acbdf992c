"""Wire encodings of transcript messages, remembered between calls.

A session resends its whole transcript every turn, and a message never
changes once written (messages are frozen), so an adapter encodes each one
once. Entries are keyed by the message's identity and keep the message
alive, so an id is never reused while its entry exists; the least recently
used entries go first once `size` is reached. Cached encodings are shared
between requests: whoever receives them treats them as read-only, as the
SDKs do when they serialise a request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

_SIZE = 2048
K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[V]):
    """Values computed from an object, looked up by the object's identity."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, Hashable], tuple[object, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, owner: K, make: Callable[[K], V], extra: Hashable = None) -> V:
        """`make(owner)`, computed the first time `owner` (with `extra`) is asked for."""
        key = (id(owner), extra)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is owner:
                self._entries.move_to_end(key)
                return entry[1]
        value = make(owner)
        with self._lock:
            self._entries[key] = (owner, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
