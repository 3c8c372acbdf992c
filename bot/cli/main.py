"""The `neo` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from bot.action.run import action_command, add_action_parser
from bot.cli.argtypes import dollars, image_reference, positive_float, positive_int
from bot.cli.jobs import add_jobs_parser, jobs_command
from bot.cli.run_output import OUTPUT_FORMATS, Output, make_output
from bot.cli.serve import add_serve_parser, serve_command
from bot.cli.worker import add_worker_parser, worker_command
from bot.setup.flow import add_setup_app_parser, setup_app_command
from runner.errors import ConfigError
from runner.headless import RunRequest, RunResult, failed, run_headless
from runner.llm.registry import PROVIDERS
from runner.llm.types import EFFORTS
from runner.session import neo_home

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """Reports a usage mistake as one line, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neo", description="Neo, a coding agent that works on GitHub.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser(
        "run",
        help="run the agent headless on a working tree",
        description="Run the agent on a working tree until it finishes the task in PROMPT.",
    )
    run.add_argument("prompt", metavar="PROMPT", help="the task; '-' reads it from stdin")
    run.add_argument("--repo", type=Path, help="working tree (default: current directory)")
    run.add_argument("--sandbox", choices=("local", "docker"), default="local")
    run.add_argument("--image", type=image_reference, help="sandbox image for --sandbox docker")
    run.add_argument("--provider", choices=PROVIDERS, help="model provider (default: anthropic)")
    run.add_argument("--model", help="model name (default: the provider's default)")
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
        choices=EFFORTS,
        help="how hard the model thinks before it answers (default: no extended thinking)",
    )
    run.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    run.add_argument("--resume", metavar="SESSION_ID", help="continue a saved session")

    add_jobs_parser(commands)
    add_serve_parser(commands)
    add_worker_parser(commands)
    add_setup_app_parser(commands)
    add_action_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if os.environ.get("NEO_DEBUG"):
        _debug_logging()
    if args.command == "run":
        return run_command(args)
    if args.command == "jobs":
        return jobs_command(args)
    if args.command == "serve":
        return serve_command(args)
    if args.command == "worker":
        return worker_command(args)
    if args.command == "setup-app":
        return setup_app_command(args)
    if args.command == "action":
        return action_command(args)
    raise AssertionError(args.command)  # argparse allows only known commands


def run_command(args: argparse.Namespace) -> int:
    started = time.monotonic()
    output = make_output(args.output_format)
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    try:
        if not prompt.strip():
            raise ConfigError("the prompt is empty (pass PROMPT, or '-' to read it from stdin)")
        request = RunRequest(
            prompt=prompt,
            repo=args.repo,
            sandbox=args.sandbox,
            image=args.image,
            provider=args.provider,
            model=args.model,
            max_turns=args.max_turns,
            timeout=args.timeout,
            resume=args.resume,
            effort=args.effort,
            max_cost_usd=args.max_cost,
        )
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
    return EXIT_INTERRUPTED if result.error_type == "interrupted" else EXIT_FAILED


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
    try:
        return await run_headless(request, home=neo_home(), on_event=output.event, stop=stop)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def _debug_logging() -> None:
    """Neo's own debug log (raw provider error bodies, retries) on stderr.

    Only the `neo` loggers: the SDKs' debug output includes request details
    that have no place in a log someone might paste into an issue.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("neo")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
