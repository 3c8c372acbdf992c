"""Where Neo's log lines go when a command runs in a terminal or a workflow step."""

from __future__ import annotations

import logging
import sys

__all__ = ["debug_logging", "log_to_stderr"]


def log_to_stderr(*loggers: str, fmt: str = "%(message)s") -> None:
    """Send the JSON log lines of `loggers` (default: Neo's and uvicorn's) to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    for name in loggers or ("neo", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    # psycopg's pool warns in two lines at each failed connection while the
    # database is away; the queue's callers say so in one line each
    # (queue_unavailable, queue_unreachable, outcome_unwritten, heartbeat_failed).
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


def debug_logging() -> None:
    """Neo's own debug log (raw provider error bodies, retries) on stderr.

    Only the `neo` loggers: the SDKs' debug output includes request details
    that have no place in a log someone might paste into an issue.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("neo")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
