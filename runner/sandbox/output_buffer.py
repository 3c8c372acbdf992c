"""Bounded collection of a command's output.

A command can print without end (`yes`, a looping test); holding all of it
would exhaust memory long before the loop caps what the model sees. The
buffer keeps the head and the tail, and counts what passed through, so the
marker the model reads still gives the full size.
"""

from __future__ import annotations

# Far above the loop's cap (32 KiB by default), so what the model sees is the
# same as if nothing had been dropped here.
OUTPUT_LIMIT = 16 * 1024 * 1024


class OutputBuffer:
    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self._half = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self._newlines = 0
        self._last = b""

    def append(self, data: bytes) -> None:
        if not data:
            return
        self.total_bytes += len(data)
        self._newlines += data.count(b"\n")
        self._last = data[-1:]
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            # Trim in batches: each byte is moved a bounded number of times.
            if len(self._tail) > 2 * self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def dropped(self) -> bool:
        return self.total_bytes > len(self._head) + len(self._tail[-self._half :])

    @property
    def total_lines(self) -> int:
        return self._newlines + (0 if self._last in (b"", b"\n") else 1)

    def getvalue(self) -> bytes:
        """The whole output, or its head and tail when it was too long."""
        return bytes(self._head) + bytes(self._tail[-self._half :] if self._half else b"")
