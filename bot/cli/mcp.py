"""`neo mcp list`, and `neo run --mcp-config FILE`'s file: the MCP servers a run gets."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from bot.config import CONFIG_PATH, parse_repo_config
from bot.config.loading import MAX_CONFIG_BYTES, parse_mcp_config
from bot.exits import EXIT_OK, EXIT_USAGE
from runner.context import find_git_root
from runner.errors import ConfigError
from runner.mcp import McpSettings, Operator
from runner.network import BadEntry, NetworkPolicy, job_plan, parse_list

__all__ = ["add_mcp_parser", "mcp_command", "read_mcp_config"]


def add_mcp_parser(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="the MCP servers a run would get",
        description="The MCP servers whose tools a run gets, served from Neo's side.",
    )
    actions = mcp.add_subparsers(dest="mcp_command", required=True, parser_class=type(mcp))
    shown = actions.add_parser(
        "list",
        help="each server and tool a job would get, and why one is left out",
        description=(
            f"Start the MCP servers of the working tree's {CONFIG_PATH} (or of --mcp-config)"
            " as a job would, under this environment's NEO_MCP_* and NEO_NETWORK, and list"
            " each tool kept and each server or tool left out, with why."
        ),
    )
    shown.add_argument("--repo", type=Path, help="working tree (default: current directory)")
    shown.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help="the servers of FILE (YAML or JSON, what goes under `mcp:`), as neo run takes it",
    )
    shown.add_argument(
        "--network",
        metavar="off|LIST",
        help="with --mcp-config: the hosts URL servers may be reached on, as neo run's"
        " --network (default: none but NEO_MCP_URLS)",
    )
    shown.add_argument("--format", choices=("text", "json"), default="text")


def read_mcp_config(path: Path, operator: Operator) -> McpSettings:
    """The servers of `path`, checked against `operator`; ConfigError in one line."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"--mcp-config {path}: {error.strerror or error}") from None
    return parse_mcp_config(data, source=str(path), operator=operator).settings()


def mcp_command(args: argparse.Namespace) -> int:
    from runner.mcp.listing import list_servers, listing_json, listing_text
    from runner.mcp.run import McpRun

    repo: Path = args.repo if args.repo is not None else Path.cwd()
    if not repo.is_dir():
        print(f"neo: error: --repo {repo} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    root = find_git_root(repo) or repo.resolve()
    try:
        operator = Operator.from_environ()
        ceiling = _list("NEO_NETWORK", os.environ.get("NEO_NETWORK"), trusted=False)
        if args.mcp_config is not None:
            # As neo run takes it: the file's servers, --network's hosts.
            settings = read_mcp_config(args.mcp_config, operator)
            asked = _list("--network", args.network, trusted=True)
        else:
            if args.network is not None:
                raise ConfigError("--network goes with --mcp-config (a tree's is its config's)")
            settings, asked = _tree_config(root, operator)
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    policy = job_plan(asked, (), ceiling).agent
    listed = asyncio.run(list_servers(McpRun(settings, operator), policy, repository=root.name))
    if args.format == "json":
        print(json.dumps(listing_json(listed), ensure_ascii=False))
    else:
        print(listing_text(listed))
    return EXIT_OK


def _tree_config(root: Path, operator: Operator) -> tuple[McpSettings, NetworkPolicy | None]:
    """The servers and network of the tree's own config file, as a job would read them."""
    path = root / CONFIG_PATH
    if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
        return McpSettings(), None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{CONFIG_PATH}: {error.strerror or error}") from None
    config = parse_repo_config(data, operator=operator)
    return config.mcp.settings(), config.network_policy()


def _list(name: str, text: str | None, *, trusted: bool) -> NetworkPolicy | None:
    if text is None:
        return None
    try:
        return parse_list(text, trusted=trusted)
    except BadEntry as error:
        raise ConfigError(f"{name}: {error}") from None
