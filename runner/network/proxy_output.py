"""What a proxy's container says on its attached stream, read as it comes.

stdout is squid's access log, of which refusals are kept (the first
`MAX_REFUSED`: a loop refused a million times costs no memory); stderr holds
the script's words (`runner.network.program`: READY, AGENT), which are
awaited, and the rest of what squid and socat say, whose last KiBs name a
failure in one line.
"""

from __future__ import annotations

import asyncio
import struct

from runner.network.accesses import Access, parse_line
from runner.network.program import AGENT, PREFIX, READY, failure_detail
from runner.sandbox.base import SandboxError
from runner.text import one_line

__all__ = ["MAX_REFUSED", "ProxyOutput"]

MAX_REFUSED = 10_000
_STDERR_KEPT = 4096
_STDOUT, _STDERR = 1, 2


class ProxyOutput:
    """The stream's state: the words said, the refusals, stderr's tail."""

    def __init__(self) -> None:
        self.refused: list[Access] = []
        self.ended = asyncio.Event()
        self._said: dict[str, asyncio.Event] = {READY: asyncio.Event(), AGENT: asyncio.Event()}
        self._stderr = bytearray()

    async def read(self, reader: asyncio.StreamReader) -> None:
        """Demultiplex docker's stream (8-byte frame headers) until it ends."""
        pending = {_STDOUT: b"", _STDERR: b""}
        try:
            while True:
                kind, length = struct.unpack(">BxxxL", await reader.readexactly(8))
                payload = await reader.readexactly(length)
                if kind not in pending:
                    continue
                *lines, pending[kind] = (pending[kind] + payload).split(b"\n")
                for line in lines:
                    self._line(kind, line.decode("utf-8", "replace"))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self.ended.set()

    async def wait_for(self, word: str, failure: str, timeout: float) -> None:
        """Until the script says `word`; SandboxError(`failure`, and why) if it
        stops first or takes longer than `timeout`."""
        said = asyncio.create_task(self._said[word].wait())
        ended = asyncio.create_task(self.ended.wait())
        try:
            done, _ = await asyncio.wait(
                {said, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            said.cancel()
            ended.cancel()
        if said not in done:
            raise SandboxError(self.failure(failure))

    def stderr_tail(self) -> str:
        """The last KiBs squid and socat said (the script's words left out)."""
        return bytes(self._stderr).decode("utf-8", "replace")

    def failure(self, what: str) -> str:
        """`what`, and what stderr says stopped the proxy."""
        detail = failure_detail(bytes(self._stderr).decode("utf-8", "replace").splitlines())
        return f"{what}: {one_line(detail, 200)}" if detail else what

    def _line(self, kind: int, line: str) -> None:
        if kind == _STDERR:
            word = line.removeprefix(PREFIX).strip()
            if line.startswith(PREFIX) and word in self._said:
                self._said[word].set()
                return
            self._stderr += line.encode() + b"\n"
            del self._stderr[:-_STDERR_KEPT]
            return
        access = parse_line(line)
        if access is not None and access.denied and len(self.refused) < MAX_REFUSED:
            self.refused.append(access)
