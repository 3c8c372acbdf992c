"""A session's files read into `SessionFiles` and written back, on a real file system."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.queue import SessionFiles
from bot.worker.sessions import read_session_files, write_session_files
from runner.session import SessionError

SESSION = "octo-hello-1-0123456789abcdef"


def test_files_written_read_back_the_same(tmp_path: Path) -> None:
    files = SessionFiles(b"transcript\n", ((1, b"first child\n"), (3, b"third child\n")))
    write_session_files(tmp_path, SESSION, files)

    assert read_session_files(tmp_path, SESSION) == files
    sessions = tmp_path / "sessions"
    assert (sessions / f"{SESSION}.jsonl").read_bytes() == b"transcript\n"
    assert (sessions / f"{SESSION}.children" / "3.jsonl").read_bytes() == b"third child\n"
    assert sessions.stat().st_mode & 0o777 == 0o700
    # No temporary file is left beside them.
    assert sorted(p.name for p in sessions.iterdir()) == [f"{SESSION}.children", f"{SESSION}.jsonl"]


def test_the_archived_copy_replaces_the_local_one_children_included(tmp_path: Path) -> None:
    write_session_files(tmp_path, SESSION, SessionFiles(b"local\n", ((1, b"a\n"), (2, b"b\n"))))
    (tmp_path / "sessions" / f"{SESSION}.children" / "notes.txt").write_text("not a child")

    archived = SessionFiles(b"archived\n", ((2, b"archived b\n"),))
    write_session_files(tmp_path, SESSION, archived)

    assert read_session_files(tmp_path, SESSION) == archived
    children = tmp_path / "sessions" / f"{SESSION}.children"
    assert sorted(p.name for p in children.iterdir()) == ["2.jsonl", "notes.txt"]


def test_no_archived_copy_removes_the_local_one(tmp_path: Path) -> None:
    write_session_files(tmp_path, SESSION, SessionFiles(b"stale\n", ((1, b"a\n"),)))
    write_session_files(tmp_path, SESSION, None)

    assert read_session_files(tmp_path, SESSION) is None
    assert list((tmp_path / "sessions" / f"{SESSION}.children").iterdir()) == []
    write_session_files(tmp_path / "nothing-yet", SESSION, None)  # nothing to remove: fine


def test_an_unsafe_session_id_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="invalid session id"):
        write_session_files(tmp_path, "../escape", SessionFiles(b"x\n"))
    with pytest.raises(SessionError, match="invalid session id"):
        read_session_files(tmp_path, "../escape")


def test_an_unwritable_data_directory_is_one_line(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the data directory should be")
    with pytest.raises(SessionError, match="cannot write session file") as raised:
        write_session_files(blocked, SESSION, SessionFiles(b"x\n"))
    assert "\n" not in str(raised.value)
