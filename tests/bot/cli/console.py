"""Running the installed `neo` console script against fakes, for the CLI tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["NEO", "console_env", "last_json", "neo", "read_and_wrote"]

NEO = Path(sys.executable).with_name("neo")


def console_env(
    home: Path, *overrides: Mapping[str, str], unset: Iterable[str] = ()
) -> dict[str, str]:
    """This process's environment with `overrides` (a fake's `env`) and
    `NEO_HOME` on top, and the variables in `unset` removed."""
    env = {**os.environ}
    for values in overrides:
        env.update(values)
    env["NEO_HOME"] = str(home)
    # Let the child cache bytecode: importing the SDKs is slow without it.
    for name in ("PYTHONDONTWRITEBYTECODE", *unset):
        env.pop(name, None)
    return env


def neo(
    env: Mapping[str, str], *argv: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`neo ARGV...` run to its end, its output captured as text."""
    return subprocess.run(
        [str(NEO), *argv],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def last_json(done: subprocess.CompletedProcess[str]) -> Any:
    """The object on the last line of stdout: the `--output-format json` result."""
    return json.loads(done.stdout.strip().splitlines()[-1])


def read_and_wrote(done: subprocess.CompletedProcess[str], repo: Path) -> Any:
    """The result of a json run that read the `repo` fixture's greeting.txt and
    wrote out.txt ("made") in two turns, each of those checked."""
    assert done.returncode == 0, done.stderr
    result = last_json(done)
    assert result["is_error"] is False
    assert "hello world" in result["result"]
    assert result["stop_reason"] == "end_turn"
    assert result["num_turns"] == 2
    assert isinstance(result["cost_usd"], float)
    assert (repo / "out.txt").read_text() == "made\n"
    return result
