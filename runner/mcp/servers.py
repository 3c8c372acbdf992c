"""A run's MCP servers as the runner takes them: where each runs, which of its tools the
agent gets, what it is given, how long it may take. Values only; `bot.config.mcp`
reads them from `.github/neo.yml` (or `neo run --mcp-config FILE`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ALL_TOOLS",
    "BUILTIN_GITHUB",
    "CALL_TIMEOUT",
    "SEPARATOR",
    "STARTUP_TIMEOUT",
    "Command",
    "ContainerImage",
    "McpSettings",
    "Remote",
    "ServerSpec",
    "Source",
    "server_name_problem",
    "tool_name",
    "tool_name_problem",
]

# The tool the model sees is `<server>__<tool>`: no built-in tool has a double
# underscore, and a server's name has none, so the first one splits the two.
SEPARATOR = "__"
# `tools: ["*"]`: every tool the server lists, said explicitly.
ALL_TOOLS = "*"
STARTUP_TIMEOUT = 30.0
CALL_TIMEOUT = 60.0
# The read-only server every job has unless its config turns it off.
BUILTIN_GITHUB = "github"

# Lower case, so two entries cannot differ by case alone; short, so that
# `server__tool` stays within the 64 characters providers allow a tool name.
_SERVER_NAME = re.compile(r"[a-z][a-z0-9-]{0,29}")
# What every provider accepts as a tool's name (Anthropic's and OpenAI's rule).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class Command:
    """A program on the service's host, speaking MCP on its stdin and stdout.

    `argv[0]` is what the configuration names; the gateway runs it only when
    the operator allowed it (`runner.mcp.operator`).
    """

    argv: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True, slots=True)
class ContainerImage:
    """An image already on the service's host, run with no network; MCP over stdio."""

    image: str

    def __str__(self) -> str:
        return f"image {self.image}"


@dataclass(frozen=True, slots=True)
class Remote:
    """A Streamable-HTTP endpoint. Header values may name a secret as `${NAME}`."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.url


Source = Command | ContainerImage | Remote


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One server of a run, as its configuration asks for it."""

    name: str
    source: Source
    # The tools the agent may call, by the server's names for them; ("*",): all.
    tools: tuple[str, ...]
    # Secrets by name: their values are the operator's `NEO_MCP_<NAME>`.
    secrets: tuple[str, ...] = ()
    startup_timeout: float = STARTUP_TIMEOUT
    call_timeout: float = CALL_TIMEOUT
    # A required server that does not start fails the run; another is left out.
    required: bool = False

    def allows(self, tool: str) -> bool:
        return ALL_TOOLS in self.tools or tool in self.tools


@dataclass(frozen=True, slots=True)
class McpSettings:
    """A run's MCP servers, and whether it has the built-in read-only `github` one."""

    servers: tuple[ServerSpec, ...] = ()
    github: bool = True

    @property
    def empty(self) -> bool:
        return not self.servers and not self.github


def tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"{server}{SEPARATOR}{tool}"


def server_name_problem(name: str) -> str | None:
    """Why `name` cannot name a server, or None."""
    if not _SERVER_NAME.fullmatch(name):
        return (
            "a server's name is 1 to 30 lower-case letters, digits and hyphens,"
            " starting with a letter"
        )
    return None


def tool_name_problem(server: str, tool: str) -> str | None:
    """Why a server's tool cannot be offered under `server__tool`, or None."""
    full = tool_name(server, tool)
    if not _TOOL_NAME.fullmatch(full):
        return (
            f"{full!r} is not a name models accept (letters, digits, '_' and '-',"
            " at most 64 characters)"
        )
    return None
