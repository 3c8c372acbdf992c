"""The stored ChatGPT credentials: `$NEO_HOME/auth/chatgpt.json`.

Written whole or not at all (a temporary file in the same directory, synced,
then renamed over), readable by its owner only. A file others could read, or
one that is not ours to parse, is refused rather than half-trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from runner.auth.credentials import Credentials
from runner.auth.errors import LOGIN_HINT, CredentialsFileError, NotSignedIn
from runner.durable import fsync_directory

__all__ = ["credentials_path", "delete_credentials", "load_credentials", "save_credentials"]

_VERSION = 1


def credentials_path(home: Path) -> Path:
    return home / "auth" / "chatgpt.json"


def save_credentials(home: Path, credentials: Credentials) -> Path:
    path = credentials_path(home)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is masked by the umask and ignored for an existing directory.
    os.chmod(path.parent, 0o700)
    data = json.dumps(
        {
            "version": _VERSION,
            "access_token": credentials.access_token,
            "refresh_token": credentials.refresh_token,
            "id_token": credentials.id_token,
            "account_id": credentials.account_id,
            "expires_at": credentials.expires_at,
        },
        indent=2,
    ).encode()
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    fsync_directory(path.parent)
    return path


def load_credentials(home: Path) -> Credentials:
    """The stored credentials. Raises NotSignedIn, or CredentialsFileError."""
    path = credentials_path(home)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise NotSignedIn() from None
    except OSError as error:
        raise CredentialsFileError(f"cannot read {path}: {error.strerror}") from None
    # Before fdopen, which refuses a directory with an exception of its own.
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise CredentialsFileError(f"{path} is not a regular file; delete it and {LOGIN_HINT}")
    with os.fdopen(fd, "rb") as file:
        if mode & 0o077:
            raise CredentialsFileError(
                f"{path} is open to other users (mode {stat.S_IMODE(mode):04o}); "
                f"delete it and {LOGIN_HINT}"
            )
        raw = file.read()
    try:
        return _parse(json.loads(raw))
    except (ValueError, TypeError, KeyError):
        raise CredentialsFileError(
            f"{path} is not a Neo ChatGPT credentials file; delete it and {LOGIN_HINT}"
        ) from None


def _parse(data: Any) -> Credentials:
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        raise ValueError("not ours")
    access, refresh, id_token, account = (
        data[name] for name in ("access_token", "refresh_token", "id_token", "account_id")
    )
    if not all(isinstance(text, str) and text for text in (access, refresh, id_token, account)):
        raise ValueError("a token is missing")
    expires_at = data.get("expires_at")
    if expires_at is not None and (
        isinstance(expires_at, bool) or not isinstance(expires_at, int | float)
    ):
        raise ValueError("bad expiry")
    return Credentials(
        access, refresh, id_token, account, None if expires_at is None else float(expires_at)
    )


def delete_credentials(home: Path) -> bool:
    """Forget the stored credentials; whether there were any.

    Raises CredentialsFileError when the path holds something else (a
    directory): not Neo's to delete.
    """
    path = credentials_path(home)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        raise CredentialsFileError(f"{path} is a directory, not Neo's credentials") from None
    return True
