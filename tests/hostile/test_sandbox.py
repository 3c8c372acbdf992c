"""Hostile tool calls against the sandboxes, run by a real `neo run`.

Every case is a row of a table below; the tests around them stay as they are.
The rows of a table are the calls of one `neo run` (one per sandbox), made in
turn: a `neo run` costs seconds of CPU, a call next to nothing. Each row is
still a test of its own, checking its own call's result (and the peak memory
up to it).

- `ENVIRON_READS`: a bash command that hunts for the run's secrets (the API
  key, the App's private key, the webhook secret, all in `neo run`'s own
  environment). Add a row `pytest.param("<command>", id="<what it tries>")`;
  the test asserts that no secret appears in what the model gets back, and
  that the command did run (its tool result gives an exit code; reading a
  process's environment may also just be refused).
- `HUGE_READS`: a file tool called on a huge file. Add a row
  `pytest.param(<sandbox>, <file maker>, <tool>, <input>, id=...)`, where the
  file maker (see `sparse_text`, ...) writes `big` (named after its maker:
  the rows of a maker share its file, which a row must not change). The test
  asserts that the peak memory of the `neo run` process (which reads files
  itself in the local sandbox) and of the sandbox's exec agent (which reads
  them in the docker sandbox; the command runner in the local one) stays
  under `MAX_RSS_KIB` through the row's call, and that the model got an
  answer, not a crash. Both peaks are read after each row: a row's are those
  of the run up to its end (no less than its own), so the first row whose
  peak passes the bound is the one that did it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from tests.fakes import FakeAnthropicAPI, Reply, ReplyFactory, text, tool_use

# The engine and the sandbox image, for the docker rows.
from tests.runner.sandbox.conftest import docker_client  # noqa: F401

NEO = Path(sys.executable).with_name("neo")
MiB = 1024 * 1024
# Over the bound below: a reader that held the whole file would pass it.
HUGE = 256 * MiB
# Below the file's size, well above an idle `neo run` (about 125 MiB).
MAX_RSS_KIB = 200 * 1024


@pytest.fixture
def secret_env() -> dict[str, str]:
    return hostile_secrets()


def hostile_secrets() -> dict[str, str]:
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
    on_turn: Callable[[int, int], None] | None = None,
) -> tuple[list[str], int]:
    """Run `neo run` whose model makes `calls`, one a turn; their tool results
    and the child's peak RSS in KiB.

    `on_turn(n, pid)`, if given, runs as the model is asked for turn n (0-based:
    the calls before it are done), with `neo run`'s process id.
    """
    pid = tree.parent / "pid"
    replies = [
        *[
            Reply([tool_use(f"toolu_{n}", name, args)], "tool_use")
            for n, (name, args) in enumerate(calls)
        ],
        Reply([text("done")]),
    ]
    fake.script(
        *(
            replies
            if on_turn is None
            else [_hooked(on_turn, n, reply, pid) for n, reply in enumerate(replies)]
        )
    )
    values = {**os.environ, **env, "NEO_HOME": str(tree.parent / "neo-home")}
    values.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [str(NEO), "run", "--sandbox", sandbox, "--timeout", "600", "--output-format", "json"]
    out, err = tree.parent / "stdout", tree.parent / "stderr"
    peak = tree.parent / "peak"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(peak), str(pid), *argv, "--repo", str(tree), "go"],
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
# The child writes its pid before it execs `neo run`: there by its first request.
_MEASURE = """
import os, sys
peak, pid_file, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
pid = os.fork()
if pid == 0:
    with open(pid_file, "w") as out:
        out.write(str(os.getpid()))
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(peak, "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _hooked(
    on_turn: Callable[[int, int], None], turn: int, reply: Reply, pid: Path
) -> ReplyFactory:
    def answer(_: dict[str, Any]) -> Reply:
        on_turn(turn, int(pid.read_text()))
        return reply

    return answer


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


@dataclass(frozen=True)
class EnvironReads:
    """The secrets one `neo run` held, and the output of each command it ran."""

    secrets: dict[str, str]
    outputs: dict[str, str]


@pytest.fixture(scope="module")
def environ_reads(tmp_path_factory: pytest.TempPathFactory) -> EnvironReads:
    held = hostile_secrets()
    tree = tmp_path_factory.mktemp("environ") / "repo"
    tree.mkdir()
    commands = [str(row.values[0]) for row in ENVIRON_READS]
    with FakeAnthropicAPI(api_key=held["ANTHROPIC_API_KEY"]) as fake:
        calls = [("bash", {"command": command}) for command in commands]
        outputs, _ = neo_run(fake, tree, {**fake.env, **held}, "local", calls)
    return EnvironReads(held, dict(zip(commands, outputs, strict=True)))


@pytest.mark.parametrize("command", ENVIRON_READS)
def test_local_commands_cannot_read_the_run_s_secrets(
    environ_reads: EnvironReads, command: str
) -> None:
    output = environ_reads.outputs[command]

    assert "exit code: " in output, output
    for name, value in environ_reads.secrets.items():
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

# The bash command, run after each huge read, that prints the peak memory of
# its parent: the docker sandbox's agent, or the local sandbox's command runner.
PARENT_PEAK = "awk '/^VmHWM:/ {print $2}' /proc/$PPID/status"


@dataclass(frozen=True)
class HugeRead:
    answer: str  # the tool's result
    peak: str  # PARENT_PEAK's output after it
    rss: int  # `neo run`'s peak RSS in KiB, from its start through the call and PARENT_PEAK


Row = tuple[str, Maker, str, dict[str, Any]]


def _row_key(make: Maker, tool: str, args: dict[str, Any]) -> str:
    return json.dumps([make.__name__, tool, args], sort_keys=True)


class HugeReads:
    """The rows of `HUGE_READS`, those of a sandbox the calls of one `neo run`,
    run when a row first asks. The makers' files are made once, in one tree."""

    def __init__(self, root: Path) -> None:
        self._tree = root / "repo"
        self._tree.mkdir()
        self._made: set[str] = set()
        self._done: dict[str, dict[str, HugeRead]] = {}

    def of(self, sandbox: str, make: Maker, tool: str, args: dict[str, Any]) -> HugeRead:
        if sandbox not in self._done:
            self._done[sandbox] = self._run(sandbox)
        return self._done[sandbox][_row_key(make, tool, args)]

    def _run(self, sandbox: str) -> dict[str, HugeRead]:
        rows = [cast(Row, row.values) for row in HUGE_READS if row.values[0] == sandbox]
        calls: list[tuple[str, dict[str, Any]]] = []
        for _, make, tool, args in rows:
            if make.__name__ not in self._made:
                make(self._tree / make.__name__)
                self._made.add(make.__name__)
            calls += [(tool, {**args, "path": make.__name__}), ("bash", {"command": PARENT_PEAK})]
        rss: dict[int, int] = {}

        def measure(turn: int, pid: int) -> None:
            # Turn 2k + 2 follows row k's two calls. (Resetting the peak through
            # /proc/PID/clear_refs would need root: `neo run` is not dumpable.)
            if turn >= 2 and turn % 2 == 0:
                status = Path(f"/proc/{pid}/status").read_text()
                rss[turn // 2 - 1] = int(status.split("VmHWM:")[1].split()[0])

        held = hostile_secrets()
        with FakeAnthropicAPI(api_key=held["ANTHROPIC_API_KEY"]) as fake:
            results, _ = neo_run(fake, self._tree, {**fake.env, **held}, sandbox, calls, measure)
        return {
            _row_key(make, tool, args): HugeRead(results[2 * n], results[2 * n + 1], rss[n])
            for n, (_, make, tool, args) in enumerate(rows)
        }


@pytest.fixture(scope="module")
def huge_reads(tmp_path_factory: pytest.TempPathFactory) -> HugeReads:
    return HugeReads(tmp_path_factory.mktemp("huge"))


@pytest.mark.parametrize(("sandbox", "make", "tool", "args"), HUGE_READS)
def test_a_huge_file_is_read_in_bounded_memory(
    request: pytest.FixtureRequest,
    huge_reads: HugeReads,
    sandbox: str,
    make: Maker,
    tool: str,
    args: dict[str, Any],
) -> None:
    if sandbox == "docker":
        # The engine and the image, or a failure saying what to run.
        request.getfixturevalue("docker_client")

    read = huge_reads.of(sandbox, make, tool, args)

    assert read.answer
    assert "Traceback" not in read.answer
    assert read.rss < MAX_RSS_KIB, f"neo run peaked at {read.rss} KiB: {read.answer[:300]}"
    assert int(read.peak.split()[0]) < MAX_RSS_KIB, f"the sandbox's reader peaked at {read.peak}"
