"""The built-in `github` server's effects on the process that builds it."""

from __future__ import annotations

import logging

from runner.mcp.github import github_server
from tests.runner.mcp.test_gateway import Reads


def test_building_the_server_leaves_the_processs_logging_alone() -> None:
    # The root logger as a `neo` process starts: no handler (pytest's own set aside).
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers[:] = []
    root.setLevel(logging.WARNING)
    try:
        github_server(Reads())
        after = root.handlers[:], root.level
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)

    assert after == ([], logging.WARNING)
