"""Thread sessions through a queue that keeps them for every host (PostgreSQL's).

Before a job runs, the archived copy replaces this host's files: the database
is the truth. After it, the files go back, which the queue accepts only while
the job still holds its lease. The job mark travels inside the transcript, so a
retry on another host still drops a dead attempt's turns. A queue that keeps
no sessions (SQLite's) leaves the files where the runner wrote them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from bot.queue.base import JobQueue, SessionArchive, SessionFiles
from bot.queue.waking import WakingQueue
from runner.durable import fsync_directory
from runner.session import SessionError, SessionStore

__all__ = ["archive_of", "read_session_files", "write_session_files"]


def archive_of(queue: JobQueue) -> SessionArchive | None:
    """`queue` as a `SessionArchive`, looking through a `WakingQueue`; None if it keeps none."""
    inner = queue.queue if isinstance(queue, WakingQueue) else queue
    return inner if isinstance(inner, SessionArchive) else None


def read_session_files(data_dir: Path, session_id: str) -> SessionFiles | None:
    """Session `session_id` as the runner left it under `data_dir`; None when it has no file."""
    store = SessionStore(data_dir)
    path = store.path(session_id)
    try:
        transcript = path.read_bytes()
        children = tuple(
            (number, store.child_path(session_id, number).read_bytes())
            for number in store.child_numbers(session_id)
        )
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SessionError(f"cannot read session file {path}: {_reason(error)}") from None
    return SessionFiles(transcript=transcript, children=children)


def write_session_files(data_dir: Path, session_id: str, files: SessionFiles | None) -> None:
    """Make `data_dir`'s session `session_id` exactly `files`: none at all when None.

    Each file is replaced atomically, so a runner never reads half of one.
    """
    store = SessionStore(data_dir)
    path = store.path(session_id)
    children = store.children_directory(session_id)
    wanted = dict(files.children) if files is not None else {}
    try:
        if files is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            _private_directory(store.directory)
            _replace(path, files.transcript)
        if wanted:
            _private_directory(children)
        for number, data in wanted.items():
            _replace(store.child_path(session_id, number), data)
        for number in store.child_numbers(session_id):
            if number not in wanted:
                store.child_path(session_id, number).unlink()
    except OSError as error:
        raise SessionError(f"cannot write session file {path}: {_reason(error)}") from None


def _private_directory(directory: Path) -> None:
    # Sessions hold prompts and tool output: private to the user, as the runner keeps them.
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)


def _replace(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_directory(path.parent)


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__
