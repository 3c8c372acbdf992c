"""HTTP/1.1 for `neo serve`: uvicorn's httptools protocol, with bounded request heads.

A head must arrive within NEO_HEAD_TIMEOUT seconds (else 408) and be at
most MAX_HEAD_BYTES (else 431): docs/architecture.md, "Intake".
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import TimerHandle
from typing import Any, ClassVar

import orjson
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from bot.config.settings import DEFAULT_REQUEST_SECONDS

log = logging.getLogger("neo.server")

# A delivery's headers are about 1 KiB; 64 KiB is generous and bounds what a
# head that never completes may hold.
MAX_HEAD_BYTES = 64 * 1024
_TOO_LARGE = f"the request's headers are larger than {MAX_HEAD_BYTES} bytes"


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol whose request heads have a deadline and a size cap.

    A request pays about 3 us for both (uvicorn's own part of it is about
    20 us, the whole delivery some 500 us): the deadline is a clock read and
    two stores, checked by one timer per connection that is re-armed lazily
    rather than armed and cancelled per request; the size is counted per
    chunk read, and only while a head is being read.
    """

    # Seconds a head may take (NEO_HEAD_TIMEOUT): set by `with_head_deadline`.
    head_seconds: ClassVar[float] = DEFAULT_REQUEST_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: TimerHandle | None = None
        # When the connection began to wait for the current request's head
        # (loop time); None while a request is handled.
        self._head_since: float | None = None
        # Bytes of the current request's head read so far; None while its
        # body is read (the app bounds that).
        self._head_bytes: int | None = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_since = self.loop.time()
        self._head_timer = self.loop.call_later(self.head_seconds, self._check_head)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is None:
            super().data_received(data)
            return
        # Counted before parsing, so the rest of a read that ends one request
        # and starts the next does not count for the next: the cap is exact
        # to one read (uvloop reads at most 250 KB at a time).
        self._head_bytes += len(data)
        super().data_received(data)
        if (
            self._head_bytes is not None
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            if self.cycle is not None and not self.cycle.response_complete:
                # A pipelined head, read while the previous request is
                # answered: that answer first, then the refusal.
                self.flow.pause_reading()
            else:
                self._refuse(431, _TOO_LARGE)

    def on_headers_complete(self) -> None:
        self._head_since = None
        read, self._head_bytes = self._head_bytes, None
        # Headers that arrived in one chunk with their body are measured here.
        if read is not None and read > MAX_HEAD_BYTES and self._head_size() > MAX_HEAD_BYTES:
            # Answered through the request's own cycle, as uvicorn answers 503
            # when over its concurrency limit: the parser and the pipeline
            # stay consistent, and the answer closes the connection. Its
            # target is never routed; uvicorn would refuse one over 64 KiB
            # with a 400 as it parses it.
            self.url = b"/"
            app, self.app = self.app, _head_too_large
            try:
                super().on_headers_complete()
            finally:
                self.app = app
            return
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # what follows is the next request's head

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        # A pipelined request already has its headers; otherwise the
        # connection now waits for the next request, on a new deadline.
        if pipelined or self.transport.is_closing():
            return
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(431, _TOO_LARGE)
        else:
            self._head_since = self.loop.time()

    def _check_head(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        since, now = self._head_since, self.loop.time()
        deadline = self.head_seconds
        if since is not None and now - since >= deadline:
            self._refuse(408, f"the request's headers took longer than {deadline:g} s")
            return
        later = deadline if since is None else since + deadline - now
        self._head_timer = self.loop.call_later(later, self._check_head)

    def _head_size(self) -> int:
        # The request line and header lines, as sent but for optional spaces.
        line = len(self.parser.get_method()) + len(self.url) + len(" HTTP/1.1\r\n") + 1
        return line + sum(len(name) + len(value) + 4 for name, value in self.headers) + 2

    def _refuse(self, status: int, reason: str) -> None:
        log.info(orjson.dumps({"event": "request_refused", "status": status}).decode())
        body = orjson.dumps({"error": reason})
        defaults = self.server_state.default_headers
        self.transport.write(
            b"".join(
                [
                    STATUS_LINE[status],
                    *(name + b": " + value + b"\r\n" for name, value in defaults),
                    b"content-type: application/json\r\n",
                    b"content-length: %d\r\n" % len(body),
                    b"connection: close\r\n\r\n",
                    body,
                ]
            )
        )
        self.transport.close()


def with_head_deadline(seconds: float) -> type[BoundedHttpToolsProtocol]:
    """The protocol for uvicorn's `Config(http=...)`, whose heads are due within `seconds`.

    A class, not an instance's argument: uvicorn makes each connection's
    protocol itself, with arguments of its own.
    """

    class Bounded(BoundedHttpToolsProtocol):
        head_seconds = seconds

    return Bounded


async def _head_too_large(
    scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
) -> None:
    body = orjson.dumps({"error": _TOO_LARGE})
    log.info(orjson.dumps({"event": "request_refused", "status": 431}).decode())
    await send(
        {
            "type": "http.response.start",
            "status": 431,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
