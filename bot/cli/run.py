"""`neo run`: the agent headless on a working tree, its events on the terminal.

This module declares the flags and checks what needs no runner: a mistake in a
flag, the prompt, a network list or NEO_HOME is refused before `bot.cli.run_agent`
loads the runner, the model SDKs and the output renderers, which cost every
refused start most of a second of CPU. So the choices below are written out
rather than imported from the runner's packages (tests/bot/cli/test_run.py holds
them equal to the runner's).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.cli.argtypes import dollars, image_reference, positive_float, positive_int, session_id
from bot.exits import EXIT_USAGE
from runner.errors import ConfigError
from runner.home import check_home, neo_home
from runner.network import METHODS, BadEntry, NetworkPolicy, parse_list

__all__ = ["Checked", "add_run_parser", "run_command"]

# The operator's bound on every run's network, as the service reads it.
NETWORK_VARIABLE = "NEO_NETWORK"
LOCAL_NETWORK = (
    "neo: the local sandbox cannot enforce a network policy: its commands have this"
    " machine's network (--sandbox docker can)"
)
# runner.llm.registry's PROVIDERS and OPENAI_AUTHS, runner.llm.types' EFFORTS,
# bot.cli.run_output's OUTPUT_FORMATS, and runner.subagent's SubagentSettings defaults.
PROVIDERS = ("anthropic", "openai", "chat-completions", "openrouter", "google")
OPENAI_AUTHS = ("api_key", "subscription")
EFFORTS = ("low", "medium", "high")
OUTPUT_FORMATS = ("text", "json", "stream-json")
SUBAGENTS_AT_MOST = 16
SUBAGENT_MAX_TURNS = 20


def add_run_parser(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="run the agent headless on a working tree",
        description="Run the agent on a working tree until it finishes the task in PROMPT.",
    )
    run.add_argument("prompt", metavar="PROMPT", help="the task; '-' reads it from stdin")
    run.add_argument("--repo", type=Path, help="working tree (default: current directory)")
    run.add_argument("--sandbox", choices=("local", "docker"), default="local")
    run.add_argument("--image", type=image_reference, help="sandbox image for --sandbox docker")
    run.add_argument(
        "--setup",
        choices=("auto", "none"),
        help="--sandbox docker: install the tree's dependencies first, detected from its files"
        " as jobs do, or not (default: auto; the local sandbox never does)",
    )
    run.add_argument(
        "--network",
        metavar="off|LIST",
        help="what --sandbox docker's commands may reach, through Neo's proxy: off, or"
        " ecosystems and hosts separated by commas (default: the ecosystems automatic setup"
        " detects); bounded by NEO_NETWORK",
    )
    run.add_argument(
        "--network-methods",
        choices=METHODS,
        help="what plain HTTP may do through the proxy: read (GET, HEAD, OPTIONS) or all"
        " (default: read)",
    )
    run.add_argument("--provider", choices=PROVIDERS, help="model provider (default: anthropic)")
    run.add_argument("--model", help="model name (default: the provider's default)")
    run.add_argument(
        "--fallback",
        choices=PROVIDERS,
        metavar="PROVIDER",
        help="provider to turn to when the first still fails with 429 or 5xx after its retries",
    )
    run.add_argument("--fallback-model", metavar="MODEL", help="the fallback's model name")
    run.add_argument(
        "--openai-auth",
        choices=OPENAI_AUTHS,
        help="how --provider openai signs in: OPENAI_API_KEY, or the ChatGPT sign-in "
        "of `neo login chatgpt` (default: api_key, or the resumed session's)",
    )
    run.add_argument("--max-turns", type=positive_int, default=100, metavar="N")
    run.add_argument("--timeout", type=positive_float, metavar="SECONDS")
    run.add_argument(
        "--max-cost",
        type=dollars,
        metavar="USD",
        help="stop before the model call that would cost the run more than this",
    )
    run.add_argument(
        "--effort",
        choices=(*EFFORTS, "none"),
        default="medium",
        help="how hard the model thinks before it answers, as jobs do by default; 'none':"
        " no extended thinking (default: medium)",
    )
    run.add_argument(
        "--no-subagents",
        action="store_true",
        help="no agent tool: the model explores with its own tools only",
    )
    run.add_argument(
        "--subagent-model", metavar="MODEL", help="the subagents' model (default: the run's)"
    )
    run.add_argument(
        "--max-subagents",
        type=positive_int,
        metavar="N",
        help=f"subagents the run may start (default: {SUBAGENTS_AT_MOST})",
    )
    run.add_argument(
        "--subagent-max-turns",
        type=positive_int,
        metavar="N",
        help="model calls each subagent may make before it reports what it found"
        f" (default: {SUBAGENT_MAX_TURNS})",
    )
    run.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help="give the agent the tools of the MCP servers in FILE (YAML or JSON: what goes"
        " under `mcp:` in .github/neo.yml), under this environment's NEO_MCP_*",
    )
    run.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    run.add_argument(
        "--resume", type=session_id, metavar="SESSION_ID", help="continue a saved session"
    )
    run.add_argument(
        "--no-skill",
        action="append",
        default=[],
        metavar="NAME",
        help="leave the skill NAME out of the catalog and never invoke it (repeatable)",
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """What `run_command` read and checked before loading the runner."""

    prompt: str
    network: NetworkPolicy | None
    network_ceiling: NetworkPolicy | None
    started: float  # time.monotonic() as the command began


def run_command(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        checked = _check(args, started)
    except ConfigError as error:
        if args.output_format == "text":
            print(f"neo: error: {error}", file=sys.stderr)
            return EXIT_USAGE
        from bot.cli.run_agent import refuse  # the result object, for a program to read

        return refuse(args, error, started)
    from bot.cli.run_agent import run_agent

    return run_agent(args, checked)


def _check(args: argparse.Namespace, started: float) -> Checked:
    """What the command line and the environment say, checked; ConfigError otherwise."""
    prompt = _stdin_prompt() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise ConfigError("the prompt is empty (pass PROMPT, or '-' to read it from stdin)")
    if args.fallback_model and not args.fallback:
        raise ConfigError("--fallback-model needs --fallback PROVIDER")
    if args.setup is not None and args.sandbox != "docker":
        raise ConfigError("--setup applies to --sandbox docker only")
    if args.no_subagents and (args.subagent_model or args.max_subagents or args.subagent_max_turns):
        raise ConfigError(
            "--subagent-model, --max-subagents and --subagent-max-turns need subagents"
            " (no --no-subagents)"
        )
    checked = Checked(
        prompt=prompt,
        network=_network(args),
        network_ceiling=_ceiling(os.environ.get(NETWORK_VARIABLE)),
        started=started,
    )
    check_home(neo_home())
    return checked


def _network(args: argparse.Namespace) -> NetworkPolicy | None:
    asked = args.network or args.network_methods or os.environ.get(NETWORK_VARIABLE)
    if args.sandbox == "local" and asked:
        print(LOCAL_NETWORK, file=sys.stderr)
    if args.network is None:
        return None
    try:
        # The user's own list: like the operator's, it may reach private addresses.
        return parse_list(args.network, args.network_methods or "read", trusted=True)
    except BadEntry as error:
        raise ConfigError(f"--network: {error}") from None


def _ceiling(text: str | None) -> NetworkPolicy | None:
    if text is None:
        return None
    try:
        return parse_list(text)
    except BadEntry as error:
        raise ConfigError(f"{NETWORK_VARIABLE}: {error}") from None


def _stdin_prompt() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"the prompt on stdin is not valid UTF-8 (byte {error.start + 1} of {len(data)})"
        ) from None
