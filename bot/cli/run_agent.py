"""`neo run` once its command line passed `bot.cli.run`'s checks: the run itself.

The runner, the model SDKs and the output renderers load here, only for a
command line that can run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

from bot.cli.mcp import read_mcp_config
from bot.cli.run import Checked
from bot.cli.run_output import Output, make_output
from bot.config.prices import prices_from_environment
from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from runner.agent import Event, ToolNotice
from runner.assembly import RunSettings
from runner.errors import ConfigError
from runner.headless import RunRequest, RunResult, failed, run_headless
from runner.home import neo_home
from runner.llm.price_book import PriceBook
from runner.mcp import Operator
from runner.mcp.report import McpSkipped
from runner.mcp.run import NO_MCP, McpRun
from runner.subagent import SubagentSettings
from runner.text import one_line

__all__ = ["refuse", "run_agent"]


def run_agent(args: argparse.Namespace, checked: Checked) -> int:
    """The run `args` asks for, its events and result on the terminal; the exit status."""
    output = make_output(args.output_format)
    try:
        request = RunRequest(
            prompt=checked.prompt,
            repo=args.repo,
            sandbox=args.sandbox,
            image=args.image,
            setup=args.setup or "auto",
            resume=args.resume,
            network=checked.network,
            network_methods=args.network_methods,
            network_ceiling=checked.network_ceiling,
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
        result = asyncio.run(_run(request, output))
    except ConfigError as error:
        return _refused(output, args, error, checked.started)
    output.finish(result)
    if not result.is_error:
        return EXIT_OK
    if result.error_type == "config_error":
        # A setting found wrong only once the run began: still the user's to fix.
        return EXIT_USAGE
    return EXIT_INTERRUPTED if result.error_type == "interrupted" else EXIT_FAILED


def refuse(args: argparse.Namespace, error: ConfigError, started: float) -> int:
    """A run refused before it began, as its output format reports one."""
    return _refused(make_output(args.output_format), args, error, started)


def _refused(output: Output, args: argparse.Namespace, error: ConfigError, started: float) -> int:
    if args.output_format != "text":
        output.finish(failed(error, started))
    print(f"neo: error: {error}", file=sys.stderr)
    return EXIT_USAGE


def _mcp(path: Path | None) -> McpRun:
    """`--mcp-config`'s servers, and what this environment's operator allows them."""
    if path is None:
        return NO_MCP
    operator = Operator.from_environ()
    return McpRun(read_mcp_config(path, operator), operator)


def _subagents(args: argparse.Namespace) -> SubagentSettings:
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
