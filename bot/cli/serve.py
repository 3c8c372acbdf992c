"""`neo serve`: the webhook server, the scheduler and, with NEO_WORKERS > 0, in-process workers."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from bot.cli.argtypes import port
from bot.config.settings import ensure_data_dir, load_settings
from bot.exits import EXIT_OK, EXIT_USAGE
from bot.intake.listen import listening_socket
from bot.logs import log_to_stderr
from runner.errors import ConfigError


def add_serve_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="receive GitHub webhooks and queue the work they ask for",
        description=(
            "Serve POST /api/github/webhooks, GET /healthz and GET /metrics. "
            "Settings come from NEO_* variables (see docs/github-app.md)."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=port, default=8000, help="port to listen on (default: 8000)")


def serve_command(args: argparse.Namespace) -> int:
    log_to_stderr()
    try:
        settings = load_settings()
        ensure_data_dir(settings)
        with listening_socket(args.host, args.port) as sock:
            # The service (uvicorn, the queue's drivers, the workers, the run
            # pages) loads only now: a bad setting or flag is reported before
            # it, at a fraction of its second or more of CPU.
            import uvloop

            from bot.service import serve_on

            # uvloop: the event loop's own work (socket reads and writes, wake-ups
            # from the queue's writer thread) costs a fraction of asyncio's.
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(serve_on(settings, sock))
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
