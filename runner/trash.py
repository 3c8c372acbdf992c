"""Directories removed off the job's path: moved aside at once, deleted in the background.

A job's working tree holds the whole repository: removing it took 1 to 14 s
on a 5,000-file repository on a busy host (bench/e2e.py --edit), between the
push and the pull request. `discard` renames the directory into the data
directory's `trash/` (one rename: the name is free again at once) and deletes
it on a thread of its own. The thread is not a daemon: a process that ends
(neo action after its job) still finishes the deletion before it exits. What
a process that died left in `trash/` goes with the next discard.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
from pathlib import Path

__all__ = ["discard"]


def discard(path: Path, trash: Path) -> threading.Thread | None:
    """Take `path` out of the way now and delete it, and whatever `trash` holds,
    on a background thread (returned, to join); None when there was nothing to do.

    `trash` must be on `path`'s file system; when the rename cannot be done
    `path` is deleted here, the slow way.
    """
    if not os.path.lexists(path):
        return _start(_entries(trash))
    try:
        trash.mkdir(parents=True, exist_ok=True)
        path.rename(trash / f"{path.name}.{secrets.token_hex(4)}")
    except OSError:
        _remove(path)
    return _start(_entries(trash))


def _entries(trash: Path) -> list[Path]:
    try:
        return list(trash.iterdir())
    except OSError:
        return []


# What this process's threads are deleting: another discard leaves them be.
_taken: set[Path] = set()
_taken_lock = threading.Lock()


def _start(paths: list[Path]) -> threading.Thread | None:
    with _taken_lock:
        mine = [path for path in paths if path not in _taken]
        _taken.update(mine)
    if not mine:
        return None
    # Another process may be deleting the same leftovers: each one's errors
    # are ignored, and the entry goes either way.
    thread = threading.Thread(target=_remove_all, args=(mine,), name="neo-trash")
    thread.start()
    return thread


def _remove_all(paths: list[Path]) -> None:
    for path in paths:
        try:
            _remove(path)
        finally:
            with _taken_lock:
                _taken.discard(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
