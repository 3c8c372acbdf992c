"""What every `neo` command shares: how the service logs reach the terminal."""

from __future__ import annotations

import logging
import sys

__all__ = ["log_to_stderr"]


def log_to_stderr(*loggers: str, fmt: str = "%(message)s") -> None:
    """Send the JSON log lines of `loggers` (default: Neo's and uvicorn's) to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    for name in loggers or ("neo", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
