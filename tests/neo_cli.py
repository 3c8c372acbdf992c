"""`neo` for the tests: the installed console script, or its `main` in this process.

A test of how `neo` refuses or reports needs the real entry point only to
prove what a process shows (its exit status, its whole stderr, no
traceback), and a table needs that proved once or twice per command and
layer: each real start costs a second or more of CPU. The other rows call
`bot.cli.main.main`, what the console script calls, in this process with
the same environment, working directory and stdin, and are checked for the
same things. Both return a `CompletedProcess` with text output.

    done = neo_process(["run", "--max-cost", "abc", "x"], env, cwd=tmp_path)
    done = neo_in_process(["run", ...], env, monkeypatch=monkeypatch, capfd=capfd)
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["NEO", "Neo", "loaded_by", "neo_in_process", "neo_process"]

NEO = Path(sys.executable).with_name("neo")
# How a test runs `neo` when it may do either: `runner(env, *argv)`.
Neo = Callable[..., subprocess.CompletedProcess[str]]


def neo_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    stdin: bytes = b"",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`neo ARGV...` as a real process with exactly the environment `env`."""
    values = dict(env)
    values.pop("PYTHONDONTWRITEBYTECODE", None)  # the child may cache what it compiles
    done = subprocess.run(
        [str(NEO), *argv],
        env=values,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


def neo_in_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    cwd: Path | None = None,
    stdin: bytes = b"",
    stop_after: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """`neo ARGV...` through `bot.cli.main.main` here, with exactly the environment
    `env` (undone after the test); its output is read at the file descriptors, as a
    process's, its children's included.

    A traceback would be an exception out of `main`, which fails the test. A
    command that should refuse but serves (`neo serve`, `neo worker`) gets a
    SIGINT after `stop_after` seconds, as Ctrl-C would stop it, and fails on its
    exit status instead of hanging the test.
    """
    from bot.cli.main import main

    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    capfd.readouterr()  # what came before is not the command's
    with _loggers_kept(), _stopped_after(stop_after):
        try:
            status = main(list(argv))
        except SystemExit as ended:  # argparse's refusals, as the interpreter ends on them
            code = ended.code
            status = code if isinstance(code, int) else int(code is not None)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(["neo", *argv], status, out, err)


def loaded_by(
    statements: str, modules: Sequence[str], env: Mapping[str, str] | None = None
) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded once it ran `statements`
    (which fail it with an assert when a command ends otherwise than they expect):
    what a command costs before it does anything is mostly what it imports."""
    script = (
        f"import json, sys\n{statements}\n"
        f"print(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@contextmanager
def _loggers_kept() -> Iterator[None]:
    """The loggers a command sets up (`neo serve` and `neo worker` log to stderr), as
    they were: a process ends with them, this one must not keep writing to an old
    capture."""
    loggers = [logging.getLogger(name) for name in ("neo", "uvicorn.error", "psycopg.pool")]
    saved = [(logger, logger.handlers[:], logger.level) for logger in loggers]
    try:
        yield
    finally:
        for logger, handlers, level in saved:
            logger.handlers[:] = handlers
            logger.setLevel(level)


@contextmanager
def _stopped_after(seconds: float | None) -> Iterator[None]:
    # SIGINT: the command's own Ctrl-C handling ends it. (A Python-level alarm
    # would not run while uvloop waits for sockets, and uvicorn raises a SIGTERM
    # again once it has stopped, which would end pytest.)
    if seconds is None:
        yield
        return
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
