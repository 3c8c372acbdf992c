"""`neo run`: the agent headless on a working tree, its events on the terminal."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.cli.argtypes import dollars, image_reference, positive_float, positive_int, session_id
from bot.cli.mcp import read_mcp_config
from bot.cli.run_output import OUTPUT_FORMATS, Output, make_output
from bot.config.prices import prices_from_environment
from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from runner.agent import Event, ToolNotice
from runner.assembly import RunSettings
from runner.errors import ConfigError
from runner.headless import RunRequest, RunResult, failed, run_headless
from runner.home import check_home, neo_home
from runner.llm.price_book import PriceBook
from runner.llm.registry import OPENAI_AUTHS, PROVIDERS
from runner.llm.types import EFFORTS
from runner.mcp import Operator
from runner.mcp.report import McpSkipped
from runner.mcp.run import NO_MCP, McpRun
from runner.network import METHODS, BadEntry, NetworkPolicy, parse_list
from runner.subagent import SubagentSettings
from runner.text import one_line

__all__ = ["add_run_parser", "run_command"]

# The operator's bound on every run's network, as the service reads it.
NETWORK_VARIABLE = "NEO_NETWORK"
LOCAL_NETWORK = (
    "neo: the local sandbox cannot enforce a network policy: its commands have this"
    " machine's network (--sandbox docker can)"
)


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
        help=f"subagents the run may start (default: {SubagentSettings().max_children})",
    )
    run.add_argument(
        "--subagent-max-turns",
        type=positive_int,
        metavar="N",
        help="model calls each subagent may make before it reports what it found"
        f" (default: {SubagentSettings().max_turns})",
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


def run_command(args: argparse.Namespace) -> int:
    started = time.monotonic()
    output = make_output(args.output_format)
    try:
        prompt = _stdin_prompt() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            raise ConfigError("the prompt is empty (pass PROMPT, or '-' to read it from stdin)")
        if args.fallback_model and not args.fallback:
            raise ConfigError("--fallback-model needs --fallback PROVIDER")
        if args.setup is not None and args.sandbox != "docker":
            raise ConfigError("--setup applies to --sandbox docker only")
        request = RunRequest(
            prompt=prompt,
            repo=args.repo,
            sandbox=args.sandbox,
            image=args.image,
            setup=args.setup or "auto",
            resume=args.resume,
            network=_network(args),
            network_methods=args.network_methods,
            network_ceiling=_ceiling(os.environ.get(NETWORK_VARIABLE)),
            mcp=_mcp(args.mcp_config),
            settings=RunSettings(
                provider=args.provider,
                model=args.model,
                fallback=(args.fallback, args.fallback_model) if args.fallback else None,
                openai_auth=args.openai_auth,
                max_turns=args.max_turns,
                time_limit=args.timeout,
                effort=None if args.effort == "none" else args.effort,
                max_cost_usd=args.max_cost,
                prices=PriceBook(operator=prices_from_environment(os.environ)),
                disabled_skills=tuple(args.no_skill),
                subagents=_subagents(args),
            ),
        )
        check_home(neo_home())
        result = asyncio.run(_run(request, output))
    except ConfigError as error:
        result = failed(error, started)
        if args.output_format != "text":
            output.finish(result)
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    output.finish(result)
    if not result.is_error:
        return EXIT_OK
    if result.error_type == "config_error":
        # A setting found wrong only once the run began: still the user's to fix.
        return EXIT_USAGE
    return EXIT_INTERRUPTED if result.error_type == "interrupted" else EXIT_FAILED


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


def _mcp(path: Path | None) -> McpRun:
    """`--mcp-config`'s servers, and what this environment's operator allows them."""
    if path is None:
        return NO_MCP
    operator = Operator.from_environ()
    return McpRun(read_mcp_config(path, operator), operator)


def _subagents(args: argparse.Namespace) -> SubagentSettings:
    if args.no_subagents and (args.subagent_model or args.max_subagents or args.subagent_max_turns):
        raise ConfigError(
            "--subagent-model, --max-subagents and --subagent-max-turns need subagents"
            " (no --no-subagents)"
        )
    settings = SubagentSettings(enabled=not args.no_subagents, model=args.subagent_model)
    if args.max_subagents is not None:
        settings = replace(settings, max_children=args.max_subagents)
    if args.subagent_max_turns is not None:
        settings = replace(settings, max_turns=args.subagent_max_turns)
    return settings


async def _run(request: RunRequest, output: Output) -> RunResult:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        if stop.is_set():
            # A second Ctrl-C: the person wants out now.
            os._exit(EXIT_INTERRUPTED)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, interrupt)

    def on_event(event: Event) -> None:
        if isinstance(event, ToolNotice) and isinstance(event.payload, McpSkipped):
            for left in event.payload.skipped:
                reason = one_line(left.reason, 300)
                print(f"neo: MCP server {left.server!r} left out: {reason}", file=sys.stderr)
        output.event(event)

    try:
        return await run_headless(request, home=neo_home(), on_event=on_event, stop=stop)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
