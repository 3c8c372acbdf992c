"""Neo's own directory on this machine: sessions, the sign-in, the queue."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from runner.errors import ConfigError

__all__ = ["check_home", "neo_home"]


def neo_home(environ: Mapping[str, str] | None = None) -> Path:
    """`$NEO_HOME`, or `~/.neo` when unset or empty."""
    home = (os.environ if environ is None else environ).get("NEO_HOME")
    return Path(home).expanduser() if home else Path.home() / ".neo"


def check_home(home: Path) -> None:
    """Raise ConfigError, naming NEO_HOME, unless `home` is a directory or
    can be made one (nothing in its way is a file). Creates nothing."""
    for path in (home, *home.parents):
        try:
            is_dir = path.is_dir()
            exists = is_dir or path.exists()
        except OSError:  # e.g. a name too long
            exists, is_dir = False, False
        if not exists:
            continue
        if not is_dir:
            where = "is" if path == home else f"is under {path}, which is"
            raise ConfigError(f"Neo's home {home} {where} not a directory (NEO_HOME)")
        return
