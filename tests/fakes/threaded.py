"""Serving a fake's ASGI app from a background thread, for one test's lifetime,
and the lifecycle every served fake shares (`Served`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import Any, ClassVar, Self

import uvicorn
from starlette.types import ASGIApp

__all__ = ["DRAIN_SECONDS", "Served", "ThreadedServer"]

# How long a stopping server waits for in-flight responses before cancelling them.
DRAIN_SECONDS = 2.0


# How often a serving loop looks at `should_exit` when nobody wakes it (as uvicorn's
# stock loop does): `ThreadedServer.stop` wakes it at once.
_TICK_SECONDS = 0.1


class _QuickServer(uvicorn.Server):
    # The stock server ticks and drains every 0.1 s; a per-test fixture wants a
    # quicker stop. The main loop sleeps until `exit_now` wakes it rather than
    # polling: a fake serves for a whole test, and a 5 ms poll cost 45 ms of CPU
    # per second of it. The drain polls fast, but only while stopping.

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        while not self.should_exit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), _TICK_SECONDS)

    def exit_now(self) -> None:
        """Ask the serving thread to stop, and wake its loop to see it."""
        self.should_exit = True
        # Set before `_loop`: a loop seen here has its event.
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = time.monotonic() + DRAIN_SECONDS
        state = self.server_state
        while (state.connections or state.tasks) and not self.force_exit:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.005)
        for task in state.tasks:
            task.cancel()


class ThreadedServer:
    """`app` on 127.0.0.1 at an OS-chosen port, in a daemon thread."""

    def __init__(self, app: ASGIApp, name: str) -> None:
        self._app = app
        self._name = name
        self._server: _QuickServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def connections(self) -> list[Any]:
        """The server's open client connections (uvicorn protocol objects)."""
        return list(self._server.server_state.connections) if self._server else []

    def start(self, timeout: float = 10.0) -> int:
        """Serve; return the port once connections are accepted."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        # Accepted sockets inherit this: without it a response's headers and
        # body, written apart, wait out the client's delayed ACK (40 ms each).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            http="h11",
            ws="none",
            log_config=None,
            log_level="warning",
            access_log=False,
        )
        self._server = _QuickServer(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=self._name, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.ready.wait(0.05):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError(f"{self._name} did not start")
        self.port = int(sock.getsockname()[1])
        return self.port

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.exit_now()
        self._thread.join(timeout)
        if self._thread.is_alive():
            # Still draining connections: skip the wait.
            self._server.force_exit = True
            self._thread.join(timeout)
        self._server = None
        self._thread = None
        self.port = None


class Served:
    """A fake whose app a `ThreadedServer` serves while it is started; a
    context manager. A subclass sets `_label` and calls `_serve` once."""

    # Names the fake in the error a stopped one raises.
    _label: ClassVar[str]
    _serving: ThreadedServer

    def _serve(self, app: ASGIApp, name: str) -> None:
        self._serving = ThreadedServer(app, name)

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`, while serving."""
        if self._serving.port is None:
            raise RuntimeError(f"{self._label} is not running")
        return f"http://127.0.0.1:{self._serving.port}"

    @property
    def running(self) -> bool:
        return self._serving.running

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, timeout: float = 10.0) -> None:
        """Serve on an OS-chosen port; return once connections are accepted."""
        self._serving.start(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        self._serving.stop(timeout)
