"""`neo` for the hostile tables: as the installed console script, or in this process.

A row that checks a refusal of `neo` needs the real entry point only to prove
what a process shows (its exit status, its whole stderr, no traceback), and a
table needs that proved once or twice per command and layer: each real start
costs up to a few seconds of CPU. The other rows call `bot.cli.main.main`, what
the console script calls, in this process with the same environment, working
directory and stdin, and are checked for the same things.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.cli.main import main

__all__ = ["NEO", "Done", "neo_in_process", "neo_process"]

NEO = Path(sys.executable).with_name("neo")


@dataclass(frozen=True, slots=True)
class Done:
    """How a `neo` command ended: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def neo_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    stdin: bytes = b"",
    timeout: float = 120,
) -> Done:
    """`neo ARGV...` as a real process with exactly the environment `env`."""
    values = dict(env)
    values.pop("PYTHONDONTWRITEBYTECODE", None)  # importing the SDKs is slow without it
    done = subprocess.run(
        [str(NEO), *argv],
        env=values,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return Done(
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


def neo_in_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    stdin: bytes = b"",
) -> Done:
    """`neo ARGV...` through `bot.cli.main.main` here, with exactly the environment `env`.

    A traceback would be an exception out of `main`, which fails the test.
    """
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    capfd.readouterr()  # what came before is not the command's
    with _logging_kept():
        try:
            code = main(list(argv))
        except SystemExit as exit:  # argparse's refusals, as the console script's exit
            code = exit.code if isinstance(exit.code, int) else 1
    out, err = capfd.readouterr()
    return Done(code, out, err)


@contextmanager
def _logging_kept() -> Iterator[None]:
    """The loggers a command sets up (`neo worker` logs to stderr) as they were."""
    names = ("neo", "uvicorn.error", "psycopg.pool")
    kept = {
        name: (list(logging.getLogger(name).handlers), logging.getLogger(name).level)
        for name in names
    }
    try:
        yield
    finally:
        for name, (handlers, level) in kept.items():
            logger = logging.getLogger(name)
            logger.handlers[:] = handlers
            logger.setLevel(level)
