"""Hostile tool calls against the sandboxes, each run by a real `neo run`.

Every case is a row of a table below; the tests around them stay as they are.

- `ENVIRON_READS`: a bash command that hunts for the run's secrets (the API
  key, the App's private key, the webhook secret, all in `neo run`'s own
  environment). Add a row `pytest.param("<command>", id="<what it tries>")`;
  the test asserts that no secret appears in what the model gets back, and
  that the command did run (its tool result gives an exit code; reading a
  process's environment may also just be refused).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use

NEO = Path(sys.executable).with_name("neo")
MiB = 1024 * 1024
HUGE = 400 * MiB
# Far below the file's size, far above an idle `neo run` (about 90 MiB).
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
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(
            [*argv, "--repo", str(tree), "go"], env=values, stdout=stdout, stderr=stderr
        )
        # wait4, not Popen.wait: its rusage is this child's own peak memory.
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, err.read_text()
    result = json.loads(out.read_text().strip().splitlines()[-1])
    assert not result["is_error"], result
    return [tool_result(fake, n + 1) for n in range(len(calls))], usage.ru_maxrss


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
