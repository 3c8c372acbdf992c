"""What the operator of the service allows MCP servers, from its environment.

- `NEO_MCP_COMMANDS`: the commands a repository may run as servers on the
  service's host, comma-separated: names found on PATH, or absolute paths.
  A repository's `command:` names one of them exactly; its arguments are the
  repository's, so allow servers, never an interpreter or a package runner.
- `NEO_MCP_URLS`: Streamable-HTTP endpoints the operator vouches for,
  comma-separated URL prefixes (`http://127.0.0.1:8931/`); a server under
  one is reached whatever the job's network policy says, loopback and
  private addresses included. Any other URL must pass that policy.
- `NEO_MCP_<NAME>`: the value of secret NAME. A repository names the secrets
  its servers get, never their values.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from runner.errors import ConfigError

__all__ = [
    "COMMANDS_VARIABLE",
    "SECRET_PREFIX",
    "URLS_VARIABLE",
    "NotAllowed",
    "Operator",
    "secret_name_problem",
    "secret_variable",
]

SECRET_PREFIX = "NEO_MCP_"  # noqa: S105 - a prefix, not a password
COMMANDS_VARIABLE = f"{SECRET_PREFIX}COMMANDS"
URLS_VARIABLE = f"{SECRET_PREFIX}URLS"
# Names the operator's own settings take, so no secret can be called so.
_RESERVED = frozenset({"COMMANDS", "URLS"})
_SECRET_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class NotAllowed(ConfigError):
    """A server the operator's settings do not allow; the message names it and the setting."""


def secret_name_problem(name: str) -> str | None:
    """Why `name` cannot name a secret, or None."""
    if not _SECRET_NAME.fullmatch(name):
        return "a secret's name is upper-case letters, digits and '_', starting with a letter"
    if name in _RESERVED:
        return f"{SECRET_PREFIX}{name} is the operator's own setting, not a secret"
    return None


def secret_variable(name: str) -> str:
    """The operator's environment variable holding secret `name`."""
    return f"{SECRET_PREFIX}{name}"


@dataclass(frozen=True, slots=True)
class Operator:
    """The operator's MCP settings; `secrets` never appear in a repr."""

    commands: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    # Where a command's name is looked up; None: this process's PATH.
    path: str | None = field(default=None, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Operator:
        """The operator's settings in `environ` (this process's environment by default).

        Raises ConfigError for an entry of NEO_MCP_COMMANDS or NEO_MCP_URLS
        that can never match, naming it.
        """
        env = os.environ if environ is None else environ
        commands = tuple(_entries(env.get(COMMANDS_VARIABLE, "")))
        for entry in commands:
            if "/" in entry and not os.path.isabs(entry):
                raise ConfigError(
                    f"{COMMANDS_VARIABLE}: {entry!r} is neither a name nor an absolute path"
                )
        urls = tuple(_entries(env.get(URLS_VARIABLE, "")))
        for entry in urls:
            if _origin(entry) is None:
                raise ConfigError(f"{URLS_VARIABLE}: {entry!r} is not an http or https URL")
        secrets = {
            name[len(SECRET_PREFIX) :]: value
            for name, value in env.items()
            if name.startswith(SECRET_PREFIX)
            and secret_name_problem(name[len(SECRET_PREFIX) :]) is None
        }
        return cls(commands, urls, MappingProxyType(secrets), env.get("PATH"))

    def allows_command(self, program: str) -> bool:
        """Whether a repository may name `program` as a server's command."""
        return program in self.commands

    def command(self, argv: Sequence[str]) -> tuple[str, ...]:
        """`argv` with its program as the absolute path the operator allowed.

        Raises NotAllowed when it is not allowed or cannot be found.
        """
        program = argv[0]
        if not self.allows_command(program):
            raise NotAllowed(
                f"the command {program!r} is not one the operator allows ({COMMANDS_VARIABLE})"
            )
        if os.path.isabs(program):
            found: str | None = program if os.access(program, os.X_OK) else None
        else:
            found = shutil.which(program, path=self.path)
        if found is None:
            raise NotAllowed(f"the allowed command {program!r} is not found on the service's host")
        return (found, *argv[1:])

    def vouches_for(self, url: str) -> bool:
        """Whether `url` is under one of the operator's NEO_MCP_URLS."""
        origin = _origin(url)
        if origin is None:
            return False
        for entry in self.urls:
            allowed = _origin(entry)
            if allowed is None or allowed[:3] != origin[:3]:
                continue
            prefix = allowed[3]
            if origin[3] == prefix or origin[3].startswith(prefix.rstrip("/") + "/"):
                return True
        return False

    def secret(self, name: str) -> str | None:
        return self.secrets.get(name)


def _entries(text: str) -> list[str]:
    return [entry.strip() for entry in text.split(",") if entry.strip()]


def _origin(url: str) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path) of an http(s) URL, normalised; None if it is none."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme], parts.path or "/"
