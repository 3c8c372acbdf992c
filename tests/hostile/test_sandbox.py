"""Hostile tool calls against the sandboxes, each run by a real `neo run`.

Every case is a row of a table below; the tests around them stay as they are.

- `ENVIRON_READS`: a bash command that hunts for the run's secrets (the API
  key, the App's private key, the webhook secret, all in `neo run`'s own
  environment). Add a row `pytest.param("<command>", id="<what it tries>")`;
  the test asserts that no secret appears in what the model gets back, and
  that the command did run (its tool result gives an exit code; reading a
  process's environment may also just be refused).
- `HUGE_READS`: a file tool called on a huge file. Add a row
  `pytest.param(<sandbox>, <file maker>, <tool>, <input>, id=...)`, where the
  file maker (see `sparse_text`, ...) writes `big` into the tree. The test
  asserts that the peak memory of the `neo run` process (which reads files
  itself in the local sandbox) and of the sandbox's exec agent (which reads
  them in the docker sandbox; the command runner in the local one) stays
  under `MAX_RSS_KIB`, and that the model got an answer, not a crash.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use

# The engine and the sandbox image, for the docker rows.
from tests.runner.sandbox.conftest import docker_client  # noqa: F401

NEO = Path(sys.executable).with_name("neo")
MiB = 1024 * 1024
HUGE = 400 * MiB
# Far below the file's size, well above an idle `neo run` (about 125 MiB).
MAX_RSS_KIB = 200 * 1024


@pytest.fixture
def secret_env() -> dict[str, str]:
    """What `neo serve` and `neo run` hold: values that must never reach the model."""
    return {
        "ANTHROPIC_API_KEY": f"sk-ant-hostile-{secrets.token_hex(16)}",
        "NEO_GITHUB_PRIVATE_KEY": f"-----BEGIN RSA PRIVATE KEY-----{secrets.token_hex(16)}",
        "NEO_WEBHOOK_SECRET": f"hook-{secrets.token_hex(16)}",
    }


@pytest.fixture
def fake(secret_env: dict[str, str]) -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI(api_key=secret_env["ANTHROPIC_API_KEY"]) as server:
        yield server


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def neo_run(
    fake: FakeAnthropicAPI,
    tree: Path,
    env: dict[str, str],
    sandbox: str,
    calls: list[tuple[str, dict[str, Any]]],
) -> tuple[list[str], int]:
    """Run `neo run` whose model makes `calls`, one a turn; their tool results
    and the child's peak RSS in KiB."""
    fake.script(
        *[
            Reply([tool_use(f"toolu_{n}", name, args)], "tool_use")
            for n, (name, args) in enumerate(calls)
        ],
        Reply([text("done")]),
    )
    values = {**os.environ, **env, "NEO_HOME": str(tree.parent / "neo-home")}
    values.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [str(NEO), "run", "--sandbox", sandbox, "--timeout", "600", "--output-format", "json"]
    out, err = tree.parent / "stdout", tree.parent / "stderr"
    peak = tree.parent / "peak"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(peak), *argv, "--repo", str(tree), "go"],
            env=values,
            stdout=stdout,
            stderr=stderr,
            check=False,
            timeout=900,
        )
    assert child.returncode == 0, err.read_text()
    result = json.loads(out.read_text().strip().splitlines()[-1])
    assert not result["is_error"], result
    return [tool_result(fake, n + 1) for n in range(len(calls))], int(peak.read_text())


# The child's peak RSS, measured by a small interpreter that forks it: a fork
# of this test process would start with all of pytest's memory, which
# ru_maxrss counts too, from before the exec (hundreds of MiB late in a run).
_MEASURE = """
import os, sys
peak, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(peak, "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def tool_result(fake: FakeAnthropicAPI, request: int) -> str:
    last = fake.requests[request].body["messages"][-1]["content"]
    result = next(block for block in last if block["type"] == "tool_result")
    content = result.get("content", [])
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


# --- secrets in the process tree

# Each prints environment blocks as NAME=value lines.
WALK_PARENTS = (
    'p=$$; while [ "$p" -gt 1 ]; do tr "\\0" "\\n" < /proc/$p/environ;'
    " p=$(awk '/^PPid:/ {print $2}' /proc/$p/status); done"
)
ENVIRON_READS = [
    pytest.param('tr "\\0" "\\n" < /proc/$PPID/environ', id="parent-environ"),
    pytest.param('tr "\\0" "\\n" < /proc/$PPID/task/$PPID/environ', id="parent-task-environ"),
    pytest.param(WALK_PARENTS + "; true", id="walk-up-the-ppid-chain"),
    pytest.param(
        'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null'
        " | grep -aE '^(ANTHROPIC|NEO)_'; true",
        id="every-process-environ",
    ),
    pytest.param("env", id="env"),
    pytest.param('tr "\\0" "\\n" < /proc/self/environ', id="self-environ"),
    pytest.param("cat /proc/$PPID/cmdline | tr '\\0' ' '", id="parent-cmdline"),
]


@pytest.mark.parametrize("command", ENVIRON_READS)
def test_local_commands_cannot_read_the_run_s_secrets(
    fake: FakeAnthropicAPI, tree: Path, secret_env: dict[str, str], command: str
) -> None:
    env = {**fake.env, **secret_env}

    (output,), _ = neo_run(fake, tree, env, "local", [("bash", {"command": command})])

    assert "exit code: " in output, output
    for name, value in secret_env.items():
        assert value not in output, f"{name} leaked: {output[-2000:]}"


# --- huge files


def sparse_text(big: Path) -> None:
    """A thousand short lines, then a 400 MB line of NUL bytes (sparse: no disk used)."""
    big.write_bytes(b"a short line\n" * 1000)
    os.truncate(big, HUGE)


def sparse_binary(big: Path) -> None:
    big.touch()
    os.truncate(big, HUGE)


def dense_lines(big: Path) -> None:
    """400 MB of real short lines."""
    line = b"0123456789abcdefghijklmnopqrstuvwxyz\n"
    chunk = line * (MiB // len(line))
    with big.open("wb") as handle:
        while handle.tell() < HUGE:
            handle.write(chunk)


def one_line(big: Path) -> None:
    """400 MB without a newline."""
    with big.open("wb") as handle:
        for _ in range(HUGE // MiB):
            handle.write(b"x" * MiB)


Maker = Callable[[Path], None]
HUGE_READS = [
    pytest.param("local", sparse_text, "read_file", {"path": "big"}, id="local-read-sparse-text"),
    pytest.param("local", sparse_binary, "read_file", {"path": "big"}, id="local-read-binary"),
    pytest.param("local", dense_lines, "read_file", {"path": "big"}, id="local-read-many-lines"),
    pytest.param(
        "local",
        dense_lines,
        "read_file",
        {"path": "big", "offset": 5_000_000, "limit": 3},
        id="local-read-far-offset",
    ),
    pytest.param("local", one_line, "read_file", {"path": "big"}, id="local-read-one-line"),
    pytest.param(
        "local",
        one_line,
        "edit_file",
        {"path": "big", "old_string": "xy", "new_string": "z"},
        id="local-edit",
    ),
    pytest.param(
        "local", sparse_text, "grep", {"pattern": "short", "path": "big"}, id="local-grep-file"
    ),
    pytest.param("docker", sparse_text, "read_file", {"path": "big"}, id="docker-read-sparse-text"),
    pytest.param("docker", one_line, "read_file", {"path": "big"}, id="docker-read-one-line"),
    pytest.param(
        "docker",
        dense_lines,
        "read_file",
        {"path": "big", "offset": 5_000_000, "limit": 3},
        id="docker-read-far-offset",
    ),
    pytest.param(
        "docker",
        one_line,
        "edit_file",
        {"path": "big", "old_string": "xy", "new_string": "z"},
        id="docker-edit",
    ),
]

# The bash command, run after the huge read, that prints the peak memory of
# its parent: the docker sandbox's agent, or the local sandbox's command runner.
PARENT_PEAK = "awk '/^VmHWM:/ {print $2}' /proc/$PPID/status"


@pytest.mark.parametrize(("sandbox", "make", "tool", "args"), HUGE_READS)
def test_a_huge_file_is_read_in_bounded_memory(
    request: pytest.FixtureRequest,
    fake: FakeAnthropicAPI,
    tree: Path,
    secret_env: dict[str, str],
    sandbox: str,
    make: Maker,
    tool: str,
    args: dict[str, Any],
) -> None:
    if sandbox == "docker":
        # The engine and the image, or a failure saying what to run.
        request.getfixturevalue("docker_client")
    make(tree / "big")

    (answer, peak), rss = neo_run(
        fake,
        tree,
        {**fake.env, **secret_env},
        sandbox,
        [(tool, args), ("bash", {"command": PARENT_PEAK})],
    )

    assert answer
    assert "Traceback" not in answer
    assert rss < MAX_RSS_KIB, f"neo run peaked at {rss} KiB: {answer[:300]}"
    assert int(peak.split()[0]) < MAX_RSS_KIB, f"the sandbox's reader peaked at {peak}"
