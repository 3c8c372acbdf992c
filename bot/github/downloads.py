"""CI logs: where GitHub keeps one (`Logs.log_location`), and the tail of its download,
kept while it streams: memory stays bounded by the cap.

GitHub answers a job's log as plain text and a workflow run's logs as a ZIP,
both from a pre-signed URL it redirects to (read with a client that does not
follow redirects: the token must never go to that other host). Only the end of a log says why it
failed, so `TailBuffer` keeps the last `cap` bytes of a stream, and a ZIP goes
to a temporary file whose members are read back through the same buffer.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
import zipfile
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import httpx
from githubkit import GitHub

from bot.github.caller import Caller
from bot.github.errors import GitHubError
from bot.github.repo_base import RepoBase

__all__ = [
    "LOG_TAIL",
    "LogKind",
    "LogTail",
    "Logs",
    "TailBuffer",
    "download_tail",
    "download_zip_tails",
    "tail_of",
    "zip_tails",
]

# A job's log (plain text), or a workflow run's logs (a ZIP).
LogKind = Literal["job", "run"]
# Per log: enough for a test runner's summary and the traceback above it.
LOG_TAIL: Final = 64 * 1024
_CHUNK: Final = 64 * 1024
# A run's ZIP has one file per step; more than this is noise for the model.
_MEMBERS: Final = 20


class TailBuffer:
    """The last `cap` bytes fed to it; never holds more than twice `cap` plus one chunk."""

    def __init__(self, cap: int = LOG_TAIL) -> None:
        if cap < 1:
            raise ValueError("a tail cap is at least one byte")
        self.cap = cap
        self.total = 0  # bytes seen, kept or not
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(chunk) >= self.cap:
            self._data = bytearray(chunk[-self.cap :])
            return
        self._data += chunk
        # Trimmed in batches: deleting the front on every chunk would copy it each time.
        if len(self._data) > 2 * self.cap:
            del self._data[: len(self._data) - self.cap]

    @property
    def held(self) -> int:
        """Bytes in memory now (what the bound is about)."""
        return len(self._data)

    def tail(self) -> bytes:
        return bytes(self._data[-self.cap :])

    @property
    def cut(self) -> bool:
        """Whether bytes before the tail were dropped."""
        return self.total > self.cap


@dataclass(frozen=True, slots=True)
class LogTail:
    """The end of one log: its name, its last bytes as text, and its whole size."""

    name: str
    text: str
    total_bytes: int

    @property
    def cut(self) -> bool:
        return self.total_bytes > len(self.text.encode())


def _decoded(buffer: TailBuffer) -> str:
    # A cut may fall inside a UTF-8 sequence: that character is replaced, not an error.
    return buffer.tail().decode("utf-8", errors="replace")


def tail_of(chunks: Iterable[bytes], name: str, cap: int = LOG_TAIL) -> LogTail:
    """The tail of a log given as chunks."""
    buffer = TailBuffer(cap)
    for chunk in chunks:
        buffer.feed(chunk)
    return LogTail(name, _decoded(buffer), buffer.total)


def zip_tails(
    archive: BinaryIO | Path, cap: int = LOG_TAIL, members: int = _MEMBERS
) -> tuple[LogTail, ...]:
    """The tail of each file of a ZIP (at most `members`, the last ones by name).

    Each member is decompressed as a stream into a `TailBuffer`, so a large
    log never sits in memory. A file that is not a ZIP is a `zipfile.BadZipFile`.
    """
    with zipfile.ZipFile(archive) as opened:
        infos = sorted(
            (info for info in opened.infolist() if not info.is_dir()),
            key=lambda info: info.filename,
        )
        tails: list[LogTail] = []
        for info in infos[-members:]:
            with opened.open(info) as member:
                tails.append(tail_of(iter(lambda: member.read(_CHUNK), b""), info.filename, cap))
    return tuple(tails)


async def _stream(client: httpx.AsyncClient, url: str) -> AsyncIterable[bytes]:
    async with client.stream("GET", url) as response:
        response.raise_for_status()
        async for chunk in response.aiter_bytes(_CHUNK):
            yield chunk


async def download_tail(
    client: httpx.AsyncClient, url: str, name: str, cap: int = LOG_TAIL
) -> LogTail:
    """The tail of the plain-text log at `url` (a pre-signed download: no token is sent)."""
    buffer = TailBuffer(cap)
    async for chunk in _stream(client, url):
        buffer.feed(chunk)
    return LogTail(name, _decoded(buffer), buffer.total)


async def download_zip_tails(
    client: httpx.AsyncClient,
    url: str,
    cap: int = LOG_TAIL,
    *,
    members: int = _MEMBERS,
    limit: int = 512 * 1024 * 1024,
) -> tuple[LogTail, ...]:
    """The tails of the logs in the ZIP at `url`: spooled to a temporary file first,
    since a ZIP's directory is at its end. More than `limit` bytes is a ValueError."""
    with tempfile.TemporaryFile() as spool:
        size = 0
        async for chunk in _stream(client, url):
            size += len(chunk)
            if size > limit:
                raise ValueError(f"the logs archive is over {limit // (1024 * 1024)} MiB")
            spool.write(chunk)
        spool.seek(0)
        return zip_tails(spool, cap, members)


class Logs(RepoBase):
    """Where GitHub keeps a CI log: the short-lived URL its 302 names."""

    async def log_location(self, kind: LogKind, log_id: int) -> str:
        """Where GitHub keeps a job's log (plain text) or a run's logs (a ZIP): the
        short-lived URL its 302 names, to download without the token."""
        actions = self._redirecting.rest.actions
        if kind == "job":
            path = f"/repos/{self.repository}/actions/jobs/{log_id}/logs"
            ask = functools.partial(
                actions.async_download_job_logs_for_workflow_run, self.owner, self.name, log_id
            )
        else:
            path = f"/repos/{self.repository}/actions/runs/{log_id}/logs"
            ask = functools.partial(
                actions.async_download_workflow_run_logs, self.owner, self.name, log_id
            )
        response = await self._retrying(lambda: self._redirects.call("GET", path, ask))
        location = str(response.headers.get("location") or "")
        if response.status_code != 302 or not location:
            raise GitHubError(f"github: GET {path} gave no log location")
        return location

    @functools.cached_property
    def _redirects(self) -> Caller:
        # The log routes answer 302 to another host: read the Location, never follow
        # it with the token.
        config = dataclasses.replace(self._github.config, follow_redirects=False)
        return Caller(type(self._github)(self._github.auth, config=config))

    @property
    def _redirecting(self) -> GitHub[Any]:
        return self._redirects.github
