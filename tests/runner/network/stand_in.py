"""A unix socket standing in for the egress proxy's, for tests of the sandbox's relay.

    class Refusing(StandInProxy):
        def answer(self, connection: socket.socket) -> None: ...

It listens at `path` from the start, accepts on a daemon thread, and hands
each connection to `answer`, on that thread.
"""

from __future__ import annotations

import abc
import socket
import threading
from pathlib import Path


class StandInProxy(abc.ABC):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.answer(connection)

    @abc.abstractmethod
    def answer(self, connection: socket.socket) -> None:
        """Deal with one accepted connection (each test's own proxy says how)."""

    def close(self) -> None:
        self.listener.close()
