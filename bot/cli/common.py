"""What every `neo` command shares: exit statuses, and how logs reach the terminal."""

from __future__ import annotations

import logging
import sys

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "debug_logging",
    "log_to_stderr",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def log_to_stderr(*loggers: str, fmt: str = "%(message)s") -> None:
    """Send the JSON log lines of `loggers` (default: Neo's and uvicorn's) to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    for name in loggers or ("neo", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


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
