"""The stored credentials: atomic, owner-only, and refused when untrustworthy."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from runner.auth.credentials import Credentials
from runner.auth.errors import CredentialsFileError, NotSignedIn
from runner.auth.storage import (
    credentials_path,
    delete_credentials,
    load_credentials,
    save_credentials,
)

SIGNED_IN = Credentials("access-1", "refresh-1", "id-1", "acct-1", 1_700_000_000.0)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_saved_credentials_load_back_owner_only(tmp_path: Path) -> None:
    path = save_credentials(tmp_path, SIGNED_IN)

    assert path == tmp_path / "auth" / "chatgpt.json"
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert load_credentials(tmp_path) == SIGNED_IN


def test_an_existing_open_directory_is_closed_to_others(tmp_path: Path) -> None:
    (tmp_path / "auth").mkdir(mode=0o755)
    os.chmod(tmp_path / "auth", 0o755)

    save_credentials(tmp_path, SIGNED_IN)

    assert mode(tmp_path / "auth") == 0o700


def test_a_save_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    save_credentials(tmp_path, SIGNED_IN)
    inode = credentials_path(tmp_path).stat().st_ino
    newer = Credentials("access-2", "refresh-2", "id-2", "acct-1", None)

    save_credentials(tmp_path, newer)

    assert load_credentials(tmp_path) == newer
    # A new file renamed over the old one, not the old one rewritten in place.
    assert credentials_path(tmp_path).stat().st_ino != inode
    assert sorted(p.name for p in (tmp_path / "auth").iterdir()) == ["chatgpt.json"]


def test_a_save_that_fails_midway_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_credentials(tmp_path, SIGNED_IN)

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        save_credentials(tmp_path, Credentials("a2", "r2", "i2", "acct-1"))
    monkeypatch.undo()

    assert load_credentials(tmp_path) == SIGNED_IN
    assert sorted(p.name for p in (tmp_path / "auth").iterdir()) == ["chatgpt.json"]


def test_no_file_is_not_signed_in(tmp_path: Path) -> None:
    with pytest.raises(NotSignedIn) as caught:
        load_credentials(tmp_path)
    assert str(caught.value) == "not signed in to ChatGPT (run `neo login chatgpt`)"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        json.dumps({"version": 2, "access_token": "a"}).encode(),
        json.dumps({"version": 1, "access_token": "a"}).encode(),
        json.dumps(
            {
                "version": 1,
                "access_token": "a",
                "refresh_token": "r",
                "id_token": "i",
                "account_id": "",
                "expires_at": None,
            }
        ).encode(),
        b"\xff\xfe",
    ],
)
def test_a_corrupt_or_foreign_file_is_one_line(tmp_path: Path, content: bytes) -> None:
    path = credentials_path(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_bytes(content)
    path.chmod(0o600)

    with pytest.raises(CredentialsFileError) as caught:
        load_credentials(tmp_path)

    assert str(caught.value) == (
        f"{path} is not a Neo ChatGPT credentials file; delete it and run `neo login chatgpt`"
    )


def test_a_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = save_credentials(tmp_path, SIGNED_IN)
    path.chmod(0o644)

    with pytest.raises(CredentialsFileError) as caught:
        load_credentials(tmp_path)

    assert str(caught.value).startswith(f"{path} is open to other users (mode 0644)")
    assert "access-1" not in str(caught.value)


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    elsewhere = save_credentials(tmp_path / "other", SIGNED_IN)
    path = credentials_path(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.symlink_to(elsewhere)

    with pytest.raises(CredentialsFileError, match=r"^cannot read"):
        load_credentials(tmp_path)


def test_delete_says_whether_there_was_anything(tmp_path: Path) -> None:
    save_credentials(tmp_path, SIGNED_IN)

    assert delete_credentials(tmp_path) is True
    assert delete_credentials(tmp_path) is False
    with pytest.raises(NotSignedIn):
        load_credentials(tmp_path)
