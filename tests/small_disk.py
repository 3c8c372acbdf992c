"""A real small disk for tests of a full one: a 64 KiB tmpfs mounted in the
test's own directory, and a way to fill it to the last byte."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = ["fill", "small_disk"]


@contextlib.contextmanager
def small_disk(path: Path) -> Iterator[Path]:
    """`path`, made and mounted as a 64 KiB tmpfs until the block ends."""
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill(disk: Path) -> None:
    """Write to `disk` until it refuses: small writes, so no byte is left."""
    with contextlib.suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
        while True:
            filler.write(b"\0" * 512)
