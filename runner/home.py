"""Neo's own directory on this machine: sessions, the sign-in, the queue."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["neo_home"]


def neo_home(environ: Mapping[str, str] | None = None) -> Path:
    """`$NEO_HOME`, or `~/.neo` when unset or empty."""
    home = (os.environ if environ is None else environ).get("NEO_HOME")
    return Path(home).expanduser() if home else Path.home() / ".neo"
