"""Hostile inputs to `neo` commands: each ends in one line and exit 2, never a
traceback, a hang or minutes of retries. The rows marked `real` run the
installed console script as a real process (at least one per command, and
those whose proof is a process's: stdin, a read that must not hang); the
others run `bot.cli.main.main` in the test's process, checked alike
(tests/hostile/neo_cli.py).

Every case is a row of `BAD_INPUTS`: the command's arguments, its
environment and stdin, and a word the one line must hold (`names`). In
arguments and values, `{tree}` is an empty git working tree, `{home}` an
empty Neo home, `{data}` a data directory holding an empty SQLite queue,
`{file}` a regular file, `{fifo}` a FIFO no one writes to, `{dir}` an empty
directory and `{event}` a valid event file; `setup` names extra things to
make (see `SETUPS`). A row must fail within `TIMEOUT` seconds.

`neo serve` and `neo worker` start-up cases are in test_service.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.action.inputs import input_variable
from bot.queue import SqliteQueue
from tests.neo_cli import neo_in_process, neo_process

TIMEOUT = 60
SECRET = "sk-ant-hostile-cli-0123456789"


@dataclass(frozen=True)
class Bad:
    id: str
    argv: tuple[str, ...]
    names: str
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes = b""
    setup: str = ""
    # As a real process; otherwise through bot.cli.main.main in this one.
    real: bool = False


def _action(id: str, names: str, real: bool = False, **env: str) -> Bad:
    """`neo action` in a workflow run whose environment `env` spoils."""
    base = {
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_EVENT_PATH": "{event}",
        "GITHUB_REPOSITORY": "octo/hello",
        "GITHUB_RUN_ID": "7",
        "GITHUB_API_URL": "http://127.0.0.1:9",  # never reached
        "GITHUB_OUTPUT": "{dir}/output",
        input_variable("github_token"): "ghs_unused",
        input_variable("prompt"): "go",
    }
    return Bad(f"action-{id}", ("action",), names, env={**base, **env}, real=real)


def _jobs(verb: str) -> Bad:
    return Bad(f"jobs-{verb}-23-digit-id", ("jobs", verb, "1" * 23), "job id", env={})


BAD_INPUTS = [
    Bad(
        "run-stdin-not-utf8",
        ("run", "--repo", "{tree}", "-"),
        "UTF-8",
        stdin=b"fix \xff\xfe it",
        real=True,
    ),
    Bad(
        "run-neo-home-dev-null",
        ("run", "--repo", "{tree}", "go"),
        "NEO_HOME",
        {"NEO_HOME": "/dev/null"},
    ),
    Bad(
        "run-neo-home-under-a-file",
        ("run", "--repo", "{tree}", "go"),
        "NEO_HOME",
        {"NEO_HOME": "{file}/home"},
    ),
    Bad(
        "run-chatgpt-credentials-a-directory",
        ("run", "--repo", "{tree}", "--provider", "openai", "--openai-auth", "subscription", "go"),
        "chatgpt.json",
        setup="credentials-directory",
        real=True,  # refused once the run began: what bot.cli.run_agent reports
    ),
    Bad(
        "logout-chatgpt-credentials-a-directory",
        ("logout",),
        "chatgpt.json",
        setup="credentials-directory",
    ),
    Bad(
        "login-chatgpt-credentials-a-directory",
        ("login", "chatgpt"),
        "chatgpt.json",
        setup="credentials-directory",
        real=True,
    ),
    Bad("run-resume-empty", ("run", "--repo", "{tree}", "--resume", "", "go"), "--resume"),
    Bad("run-resume-blank", ("run", "--repo", "{tree}", "--resume", " ", "go"), "--resume"),
    *(_jobs(verb) for verb in ("show", "retry", "cancel")),
    Bad(
        "jobs-list-postgres-url-unparsable",
        ("jobs", "list"),
        "NEO_QUEUE_URL",
        {"NEO_QUEUE_URL": "postgresql://neo:hunter2@[db/neo"},
        real=True,
    ),
    # Real: a read that does not stop at its bound hangs the process, not the test's.
    _action("event-dev-zero", "GITHUB_EVENT_PATH", real=True, GITHUB_EVENT_PATH="/dev/zero"),
    _action("event-fifo", "GITHUB_EVENT_PATH", real=True, GITHUB_EVENT_PATH="{fifo}"),
    _action("max-turns-5001-digits", "max_turns", INPUT_MAX_TURNS="1" * 5001),
    _action("max-turns-superscript", "max_turns", INPUT_MAX_TURNS="²"),
    _action("run-id-5001-digits", "GITHUB_RUN_ID", GITHUB_RUN_ID="7" * 5001),
]


def _credentials_directory(home: Path) -> None:
    (home / "auth" / "chatgpt.json").mkdir(parents=True)


SETUPS: dict[str, Callable[[Path], None]] = {"credentials-directory": _credentials_directory}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.id for case in BAD_INPUTS])
def test_a_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, case: Bad, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    places = {
        "tree": tmp_path / "tree",
        "home": tmp_path / "home",
        "data": tmp_path / "data",
        "file": tmp_path / "a-file",
        "fifo": tmp_path / "fifo",
        "dir": tmp_path / "dir",
        "event": tmp_path / "event.json",
    }
    for name in ("tree", "home", "data", "dir"):
        places[name].mkdir()
    subprocess.run(["git", "init", "-q", str(places["tree"])], check=True, timeout=30)
    places["file"].write_text("a file\n")
    places["event"].write_text("{}")
    os.mkfifo(places["fifo"])
    asyncio.run(SqliteQueue(places["data"] / "neo.db").close())
    if case.setup:
        SETUPS[case.setup](places["home"])
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NEO_", "GITHUB_", "INPUT_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(
        NEO_HOME=str(places["home"]),
        NEO_DATA_DIR=str(places["data"]),
        ANTHROPIC_API_KEY=SECRET,
        # A model call would fail at once: a case that reaches one fails fast.
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )
    env.update({key: value.format(**places) for key, value in case.env.items()})
    argv = [arg.format(**places) for arg in case.argv]

    if case.real:
        done = neo_process(argv, env, cwd=tmp_path, stdin=case.stdin, timeout=TIMEOUT)
    else:
        done = neo_in_process(
            argv, env, cwd=tmp_path, monkeypatch=monkeypatch, capfd=capfd, stdin=case.stdin
        )

    stderr = done.stderr
    assert done.returncode == 2, stderr
    assert done.stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("neo"), stderr
    assert "Traceback" not in stderr
    assert case.names in lines[0]
    assert SECRET not in stderr
    assert "hunter2" not in stderr
