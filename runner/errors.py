"""The root of Neo's typed errors.

Every error a user can see carries `kind`, the contract's `error.type`, and a
one-line message that is safe to print: no stack trace, no secret.
"""

from __future__ import annotations

from typing import ClassVar


class NeoError(Exception):
    kind: ClassVar[str] = "error"


class ConfigError(NeoError):
    """Bad usage or configuration: the CLI exits 2."""

    kind = "config_error"
