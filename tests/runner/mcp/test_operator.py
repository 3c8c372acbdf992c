"""runner.mcp.operator: what the operator's environment allows MCP servers."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.mcp import NotAllowed, Operator


def test_the_environment_gives_commands_urls_and_secrets() -> None:
    operator = Operator.from_environ(
        {
            "NEO_MCP_COMMANDS": " mcp-server-time, /opt/mcp/docs ,,",
            "NEO_MCP_URLS": "http://127.0.0.1:8931/",
            "NEO_MCP_SENTRY_TOKEN": "s3cr3t",
            "NEO_MCP_lower": "not a secret's name",
            "NEO_NETWORK": "python",
            "PATH": "/bin",
        }
    )

    assert operator.commands == ("mcp-server-time", "/opt/mcp/docs")
    assert operator.urls == ("http://127.0.0.1:8931/",)
    assert dict(operator.secrets) == {"SENTRY_TOKEN": "s3cr3t"}
    assert "s3cr3t" not in repr(operator)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "NEO_MCP_COMMANDS",
            "bin/server",
            "NEO_MCP_COMMANDS: 'bin/server' is neither a name nor an absolute path",
        ),
        (
            "NEO_MCP_URLS",
            "127.0.0.1:8931",
            "NEO_MCP_URLS: '127.0.0.1:8931' is not an http or https URL",
        ),
    ],
)
def test_an_entry_that_can_never_match_is_one_line(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Operator.from_environ({name: value})
    assert str(caught.value) == message


def test_a_command_is_allowed_by_its_exact_name_and_found_on_path(tmp_path: Path) -> None:
    program = tmp_path / "mcp-docs"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    operator = Operator(commands=("mcp-docs", "/opt/absent"), path=str(tmp_path))

    assert operator.command(["mcp-docs", "--root", "x"]) == (str(program), "--root", "x")
    with pytest.raises(NotAllowed) as caught:
        operator.command(["mcp-doc"])
    assert str(caught.value) == (
        "the command 'mcp-doc' is not one the operator allows (NEO_MCP_COMMANDS)"
    )
    with pytest.raises(NotAllowed) as caught:
        operator.command([str(program)])  # allowed by name, not at this path
    with pytest.raises(NotAllowed) as caught:
        operator.command(["/opt/absent"])
    assert str(caught.value) == (
        "the allowed command '/opt/absent' is not found on the service's host"
    )
    empty = Operator(commands=("mcp-docs",), path=os.devnull)
    with pytest.raises(NotAllowed):
        empty.command(["mcp-docs"])


@pytest.mark.parametrize(
    ("url", "vouched"),
    [
        ("http://127.0.0.1:8931/mcp", True),
        ("http://127.0.0.1:8931/", True),
        ("HTTP://127.0.0.1:8931/other/mcp", True),
        ("http://127.0.0.1:8932/mcp", False),
        ("https://127.0.0.1:8931/mcp", False),
        ("https://docs.internal.example/mcp", True),
        ("https://docs.internal.example:443/mcp/x", True),
        ("https://docs.internal.example/mcpx", False),
        ("https://docs.internal.example/other", False),
        ("https://evil.example/?u=https://docs.internal.example/mcp", False),
        ("https://user@docs.internal.example/mcp", False),
        ("not a url", False),
    ],
)
def test_a_url_is_vouched_for_under_an_entry_of_the_same_origin(url: str, vouched: bool) -> None:
    operator = Operator(urls=("http://127.0.0.1:8931", "https://docs.internal.example/mcp"))

    assert operator.vouches_for(url) is vouched
