"""`mcp:` in `.github/neo.yml` (and `neo run --mcp-config FILE`): the repository's MCP servers.

A strict pydantic model, like the rest of the file. What the operator
allows is checked too when the validation's context carries an `Operator`
(`OPERATOR`): a command it has not allowed, or a secret it does not hold, is
a problem of the file, named at its setting.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from runner.mcp import (
    ALL_TOOLS,
    BUILTIN_GITHUB,
    CALL_TIMEOUT,
    COMMANDS_VARIABLE,
    STARTUP_TIMEOUT,
    Command,
    ContainerImage,
    McpSettings,
    Operator,
    Remote,
    ServerSpec,
    Source,
    secret_name_problem,
    secret_variable,
    server_name_problem,
)
from runner.sandbox.image import image_problem

__all__ = ["MAX_SERVERS", "OPERATOR", "Mcp", "McpServer", "mcp_settings"]

# The validation context's key for the operator whose allowances are checked.
OPERATOR = "mcp_operator"
MAX_SERVERS = 20
_SECRET_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
# Headers the transport sets itself: a repository's value would break the protocol.
_TRANSPORT_HEADERS = frozenset(
    {
        "accept",
        "connection",
        "content-length",
        "content-type",
        "host",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)
_Name = Annotated[str, Field(min_length=1, max_length=200)]


class _Strict(BaseModel):
    # As RepoConfig's: a mistake is reported, never guessed.
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __hash__(self) -> int:
        # Frozen, and hashable like the rest of the config, mappings included.
        return hash(json.dumps(self.model_dump(), sort_keys=True))


def _operator(info: ValidationInfo) -> Operator | None:
    context = info.context
    found = context.get(OPERATOR) if isinstance(context, dict) else None
    return found if isinstance(found, Operator) else None


class McpServer(_Strict):
    """One MCP server: exactly one of `image`, `url` and `command`, and its tools."""

    image: _Name | None = Field(
        default=None,
        description=(
            "A container image on the service's host (Neo never pulls one), run with no"
            " network for the job; it speaks MCP on stdin and stdout."
        ),
    )
    url: _Name | None = Field(
        default=None,
        description=(
            "A Streamable-HTTP endpoint, `https://...`. Reached only when the job's"
            " `network` allows its host, or the operator's `NEO_MCP_URLS` lists it."
        ),
    )
    command: tuple[_Name, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description=(
            "A program on the service's host and its arguments, e.g. `[mcp-server-time]`;"
            " only a program the operator allows by name (`NEO_MCP_COMMANDS`)."
        ),
    )
    tools: tuple[_Name, ...] = Field(
        min_length=1,
        max_length=200,
        description=(
            'The tools the agent gets, by the server\'s names for them; `["*"]` for all of'
            " them. Required: nothing is offered by default. The agent calls each as"
            " `<server>__<tool>`."
        ),
    )
    secrets: tuple[str, ...] = Field(
        default=(),
        max_length=20,
        description=(
            "Secrets the server gets, by name; the values are the operator's"
            " `NEO_MCP_<NAME>`, never the repository's. A command or image server gets each"
            " as the environment variable `<NAME>`; a URL server through `headers`."
        ),
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        max_length=20,
        description=(
            "A URL server's request headers; `${NAME}` in a value stands for secret NAME,"
            ' e.g. `{Authorization: "Bearer ${SENTRY_TOKEN}"}`.'
        ),
    )
    startup_timeout: float = Field(
        default=STARTUP_TIMEOUT,
        gt=0,
        le=300,
        allow_inf_nan=False,
        strict=True,
        description="Seconds the server may take to start and list its tools; then it is left out.",
    )
    call_timeout: float = Field(
        default=CALL_TIMEOUT,
        gt=0,
        le=1800,
        allow_inf_nan=False,
        strict=True,
        description="Seconds one call may take; then the agent is told it timed out.",
    )
    required: bool = Field(
        default=False,
        strict=True,
        description=(
            "Whether the job fails when the server does not start. Otherwise it goes on"
            " without it, and the progress comment and report say why."
        ),
    )

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        problem = None if value is None else image_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            parts = urllib.parse.urlsplit(value)
            parts.port  # noqa: B018 - raises for a port that is not one
        except ValueError:
            raise ValueError(f"{value!r} is not a URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http or https URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError("a URL holds no credentials: name a secret and use `headers`")
        if parts.fragment:
            raise ValueError("a server's URL has no fragment (#...)")
        return value

    @field_validator("command")
    @classmethod
    def _command(
        cls, value: tuple[str, ...] | None, info: ValidationInfo
    ) -> tuple[str, ...] | None:
        if value is None:
            return None
        program = value[0]
        if "/" in program and not os.path.isabs(program):
            raise ValueError(f"{program!r}: a command is a name on PATH or an absolute path")
        operator = _operator(info)
        if operator is not None and not operator.allows_command(program):
            raise ValueError(
                f"the operator does not allow the command {program!r} ({COMMANDS_VARIABLE})"
            )
        return value

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if ALL_TOOLS in value and len(value) > 1:
            raise ValueError(f'"{ALL_TOOLS}" stands alone: it means every tool')
        for name in value:
            if name != name.strip() or not name.isprintable():
                raise ValueError(f"{name!r} is not a tool's name")
        if len(set(value)) != len(value):
            raise ValueError("a tool is named twice")
        return value

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        for name in value:
            problem = secret_name_problem(name)
            if problem is not None:
                raise ValueError(f"{name!r}: {problem}")
        if len(set(value)) != len(value):
            raise ValueError("a secret is named twice")
        operator = _operator(info)
        if operator is not None:
            for name in value:
                if operator.secret(name) is None:
                    raise ValueError(
                        f"the operator holds no secret {name} ({secret_variable(name)} is not set)"
                    )
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a header's name")
            if name.lower() in _TRANSPORT_HEADERS:
                raise ValueError(f"{name} is the transport's own header")
            if any(c in text for c in "\r\n\0"):
                raise ValueError(f"the value of {name} holds a line break")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> McpServer:
        given = [name for name in ("image", "url", "command") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of `image`, `url` and `command`"
                + (f" (this gives {' and '.join(given)})" if given else "")
            )
        if self.headers and self.url is None:
            raise ValueError("`headers` are for a `url` server")
        if self.url is not None:
            named = {m for text in self.headers.values() for m in _SECRET_REFERENCE.findall(text)}
            unknown = sorted(named - set(self.secrets))
            if unknown:
                raise ValueError(
                    f"headers name ${{{unknown[0]}}}, which is not in `secrets`"
                    " (list every secret a header uses)"
                )
            unused = [name for name in self.secrets if name not in named]
            if unused:
                raise ValueError(
                    f"secret {unused[0]} reaches a URL server only through a header: use"
                    f" ${{{unused[0]}}} in one, or leave it out"
                )
        return self

    def source(self) -> Source:
        if self.command is not None:
            return Command(self.command)
        if self.image is not None:
            return ContainerImage(self.image)
        assert self.url is not None
        return Remote(self.url, tuple(self.headers.items()))

    def spec(self, name: str) -> ServerSpec:
        return ServerSpec(
            name=name,
            source=self.source(),
            tools=self.tools,
            secrets=self.secrets,
            startup_timeout=self.startup_timeout,
            call_timeout=self.call_timeout,
            required=self.required,
        )


class Mcp(_Strict):
    """The MCP servers whose tools the agent gets, served from the service's side."""

    servers: dict[str, McpServer] = Field(
        default_factory=dict,
        max_length=MAX_SERVERS,
        description=(
            f"The servers by name (lower-case letters, digits, hyphens), at most {MAX_SERVERS};"
            " see the table below."
        ),
    )
    github: bool = Field(
        default=True,
        strict=True,
        description=(
            "The built-in read-only `github` server: this repository's issues and pull"
            " requests with their comments, a pull request's diff, a check run's log."
        ),
    )

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServer]) -> dict[str, McpServer]:
        for name in value:
            if name == BUILTIN_GITHUB:
                raise ValueError(
                    f"{name!r} is the built-in server's name: choose another, or set"
                    " `github: false` to go without it"
                )
            problem = server_name_problem(name)
            if problem is not None:
                raise ValueError(f"{name!r}: {problem}")
        return value

    def settings(self) -> McpSettings:
        """These servers as the runner takes them."""
        return McpSettings(
            servers=tuple(server.spec(name) for name, server in self.servers.items()),
            github=self.github,
        )


def mcp_settings(mcp: Mcp | None) -> McpSettings:
    """`mcp`'s settings; None (no `mcp:` at all) is the built-in server alone."""
    return (mcp or Mcp()).settings()
