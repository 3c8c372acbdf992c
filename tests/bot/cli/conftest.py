"""The working tree and Neo home the CLI tests run in, and `neo` in this process."""

from __future__ import annotations

from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.neo_cli import Neo, neo_in_process


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


@pytest.fixture
def neo_main(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> Neo:
    """`neo(env, *argv)` through `main` in this process: for the runs that need no
    process start of their own (each command keeps one that runs the console script)."""

    def run(env: dict[str, str], *argv: str) -> CompletedProcess[str]:
        return neo_in_process(argv, env, monkeypatch=monkeypatch, capfd=capfd)

    return run
