"""Reading a file a setting names, whole: a regular file of bounded size.

A setting may name a device (`/dev/zero` never ends), a FIFO (opening one
waits for a writer that may never come), a directory or a file far larger
than any it should name: each is refused at once, with a reason fit for one
line, rather than hang, fill the memory or raise something unexpected.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_setting_file"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_setting_file(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them.

    Raises OSError, its `strerror` the reason ("a FIFO, not a regular file",
    "larger than 65536 bytes", "No such file or directory", ...).
    """
    # O_NONBLOCK: the open of a FIFO returns at once instead of waiting.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((f"{name}, " for test, name in _KINDS if test(mode)), "")
            raise OSError(errno.EINVAL, f"{kind}not a regular file")
        chunks: list[bytes] = []
        size = 0
        # Read to the end, not to st_size: a file may grow (or be a /proc one).
        while chunk := os.read(fd, 65536):
            size += len(chunk)
            if size > limit:
                raise OSError(errno.EFBIG, f"larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
