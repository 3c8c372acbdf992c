"""One change to the stored ChatGPT sign-in at a time, across processes.

OpenAI's refresh tokens are single-use: two Neo processes (workers, a `neo
run` beside `neo serve`) that refresh at once both spend the one in the file,
and whichever answer comes second is refused, leaving that process signed
out. So a refresh, a sign-in and a sign-out each hold an exclusive `flock` on
`$NEO_HOME/auth/chatgpt.lock` and read the credentials file again under it.
The kernel drops the lock with its holder, so a process that dies holding it
blocks nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

from runner.auth.errors import AuthError

__all__ = ["LOCK_TIMEOUT", "lock_path", "sign_in_lock"]

# What the holder does under the lock is one token request (30 s at most)
# and a file write; a wait longer than both means something is stuck.
LOCK_TIMEOUT = 60.0
_POLL = 0.05


def lock_path(home: Path) -> Path:
    return home / "auth" / "chatgpt.lock"


@contextlib.asynccontextmanager
async def sign_in_lock(home: Path, *, timeout: float = LOCK_TIMEOUT) -> AsyncIterator[None]:
    """Hold the sign-in lock; wait for it without blocking the event loop.

    Raises AuthError when it stays taken for `timeout` seconds or cannot be
    opened.
    """
    path = lock_path(home)
    fd = _open(path)
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise AuthError(
                    f"chatgpt sign-in: another Neo process has held {path} for"
                    f" {timeout:g} s; try again when it is done"
                )
            await asyncio.sleep(_POLL)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as error:
        raise AuthError(f"chatgpt sign-in: cannot open {path}: {error.strerror}") from None


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True
