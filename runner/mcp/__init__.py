"""MCP tools for the agent, served from the host through a gateway: the sandbox keeps no
secret and no route out."""

from runner.mcp.operator import (
    COMMANDS_VARIABLE,
    SECRET_PREFIX,
    URLS_VARIABLE,
    NotAllowed,
    Operator,
    secret_name_problem,
    secret_variable,
)
from runner.mcp.servers import (
    ALL_TOOLS,
    BUILTIN_GITHUB,
    CALL_TIMEOUT,
    SEPARATOR,
    STARTUP_TIMEOUT,
    Command,
    ContainerImage,
    McpSettings,
    Remote,
    ServerSpec,
    Source,
    server_name_problem,
    tool_name,
    tool_name_problem,
)

__all__ = [
    "ALL_TOOLS",
    "BUILTIN_GITHUB",
    "CALL_TIMEOUT",
    "COMMANDS_VARIABLE",
    "SECRET_PREFIX",
    "SEPARATOR",
    "STARTUP_TIMEOUT",
    "URLS_VARIABLE",
    "Command",
    "ContainerImage",
    "McpSettings",
    "NotAllowed",
    "Operator",
    "Remote",
    "ServerSpec",
    "Source",
    "secret_name_problem",
    "secret_variable",
    "server_name_problem",
    "tool_name",
    "tool_name_problem",
]
