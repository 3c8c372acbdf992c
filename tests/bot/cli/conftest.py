"""The working tree and Neo home the CLI tests run in."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A working tree holding greeting.txt ("hello world")."""
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "greeting.txt").write_text("hello world\n")
    return tree


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """NEO_HOME, not made yet."""
    return tmp_path / "neo-home"
