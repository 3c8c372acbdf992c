"""The exec channel's agent, run on the host: its protocol and its output bound.

The docker tests drive it inside a container through DockerSandbox; these pin
down the wire protocol itself, quickly and without an engine.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from runner.sandbox import exec_server
from runner.sandbox.output_buffer import OutputBuffer
from tests.processes import Process, wait_gone

AGENT = Path(exec_server.__file__)


class Agent:
    """The agent script as a child process, spoken to in JSON lines."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(AGENT), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout: IO[bytes] = self.process.stdout
        self.ready = self.receive()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def send_raw(self, line: bytes) -> None:
        self.stdin.write(line)
        self.stdin.flush()

    def receive(self) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.stdout.readline())
        return answer

    def close(self) -> int:
        self.stdin.close()
        return self.process.wait(10)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    running = Agent(tmp_path)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def test_it_says_it_is_ready(agent: Agent) -> None:
    assert agent.ready == {
        "id": 0,
        "ok": True,
        "ready": True,
        "protocol": exec_server.PROTOCOL,
        "pid": agent.process.pid,
    }


def test_answers_repeat_the_request_id(agent: Agent, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"\0a'\"")

    agent.send({"id": 7, "op": "read", "path": "a.txt"})
    agent.send({"id": 8, "op": "write", "path": "b/c.txt", "data": "eA=="})

    answers = sorted((agent.receive(), agent.receive()), key=lambda answer: answer["id"])
    assert answers == [
        {"id": 7, "ok": True, "data": base64.b64encode(b"\0a'\"").decode()},
        {"id": 8, "ok": True},
    ]
    assert (tmp_path / "b" / "c.txt").read_bytes() == b"x"


def test_failures_are_typed(agent: Agent) -> None:
    agent.send({"id": 1, "op": "read", "path": "../x"})
    assert agent.receive() == {
        "id": 1,
        "ok": False,
        "error": {"type": "outside", "message": "../x is outside the working tree"},
    }
    agent.send({"id": 2, "op": "read", "path": "missing"})
    assert agent.receive() == {
        "id": 2,
        "ok": False,
        "error": {"type": "os", "errno": 2, "message": "No such file or directory"},
    }
    agent.send({"id": 3, "op": "explode"})
    assert agent.receive() == {
        "id": 3,
        "ok": False,
        "error": {"type": "internal", "message": "ValueError: unknown op 'explode'"},
    }
    agent.send_raw(b"not json\n")
    assert agent.receive() == {
        "id": None,
        "ok": False,
        "error": {"type": "internal", "message": "bad request line"},
    }


def test_a_command_gets_the_agent_s_environment_or_only_its_own(agent: Agent) -> None:
    run = {"op": "run", "argv": ["env"], "cwd": None, "timeout": 10, "env": {"ONLY": "1"}}

    agent.send({"id": 1, **run})
    inherited = base64.b64decode(agent.receive()["output"]).decode().splitlines()
    agent.send({"id": 2, **run, "inherit_env": False})
    alone = base64.b64decode(agent.receive()["output"]).decode().splitlines()

    assert "ONLY=1" in inherited
    assert any(line.startswith("PATH=") for line in inherited)
    assert alone == ["ONLY=1"]


def test_cancel_kills_the_command_s_process_group(agent: Agent, tmp_path: Path) -> None:
    agent.send(
        {
            "id": 1,
            "op": "run",
            "argv": ["bash", "-c", "sleep 300 & echo $! > bg.pid; wait"],
            "timeout": 60,
        }
    )
    child = Process.seen(int(wait_for_text(tmp_path / "bg.pid")))

    agent.send({"id": 2, "op": "cancel", "target": 1})

    answer = agent.receive()
    assert (answer["id"], answer["exit_code"], answer["timed_out"]) == (1, -9, False)
    assert wait_gone(child)


def test_a_cancel_that_overtakes_its_command_still_ends_it(agent: Agent) -> None:
    run = {"id": 1, "op": "run", "argv": ["sleep", "300"], "timeout": 60}
    cancel = {"id": 2, "op": "cancel", "target": 1}

    agent.send_raw(json.dumps(run).encode() + b"\n" + json.dumps(cancel).encode() + b"\n")

    answer = agent.receive()
    assert (answer["id"], answer["exit_code"], answer["timed_out"]) == (1, -9, False)


@pytest.mark.parametrize("op", ["run", "spawn"])
@pytest.mark.parametrize("attempt", range(10))
def test_commands_that_arrive_as_stdin_closes_do_not_outlive_it(
    agent: Agent, op: str, attempt: int
) -> None:
    # Sent and closed at once: some commands are still starting when stdin
    # closes, and the shutdown must wait to kill them (it once missed one).
    marker = f"neo-closing-{os.getpid()}-{op}-{attempt}"
    for n in range(4):
        argv = ["bash", "-c", f"sleep 300; : {marker}-{n}"]
        agent.send({"id": n, "op": op, "argv": argv, "timeout": 60})
    assert agent.close() == 0

    left = [process for n in range(4) for process in _running(f"{marker}-{n}")]
    assert all(wait_gone(process) for process in left), left


def test_it_exits_when_stdin_closes_though_an_answer_is_stuck_on_a_full_stdout(
    agent: Agent, tmp_path: Path
) -> None:
    # An answer far larger than a pipe holds, which nobody reads: its thread
    # blocks in the write, holding stdout's lock. The interpreter's shutdown
    # would wait on that lock (or abort); the agent leaves without it.
    (tmp_path / "big").write_bytes(os.urandom(1 << 20))
    agent.send({"id": 1, "op": "read", "path": "big"})
    assert _some_thread_waits_on_a_pipe_write(agent.process.pid)

    assert agent.close() == 0


def _some_thread_waits_on_a_pipe_write(pid: int) -> bool:
    """Whether one of `pid`'s threads comes to block writing to a pipe (10 s at most)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                if "pipe_write" in (task / "wchan").read_text():
                    return True
        time.sleep(0.01)
    return False


def _running(marker: str) -> list[Process]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(Process.running(int(entry.name), cmdline.decode().split("\0")[:-1]))
    return found


def test_when_stdin_closes_it_ends_its_commands_and_exits(agent: Agent, tmp_path: Path) -> None:
    agent.send(
        {"id": 1, "op": "run", "argv": ["bash", "-c", "echo $$ > pid; sleep 300"], "timeout": 60}
    )
    command = Process.seen(int(wait_for_text(tmp_path / "pid")))

    assert agent.close() == 0
    assert wait_gone(command)


@pytest.mark.parametrize("seed", range(20))
def test_its_output_bound_matches_the_output_buffer(seed: int) -> None:
    chooser = random.Random(seed)
    limit = chooser.choice([0, 1, 2, 7, 64, 1000])
    ours, theirs = OutputBuffer(limit), exec_server.Output(limit)

    for _ in range(chooser.randint(0, 60)):
        chunk = bytes(chooser.choice(b"ab\n") for _ in range(chooser.randint(0, 300)))
        ours.append(chunk)
        theirs.append(chunk)

    assert theirs.getvalue() == ours.getvalue()
    assert (theirs.total_bytes, theirs.total_lines, theirs.dropped) == (
        ours.total_bytes,
        ours.total_lines,
        ours.dropped,
    )


def wait_for_text(path: Path) -> str:
    for _ in range(1000):
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "ok": True, "data": b"\0\"'\\\n"},
        {"id": 2, "ok": True, "output": b"", "exit_code": 0, "more": b"x" * 1000},
        {"id": 3, "ok": False, "error": {"type": "os"}},
        {"data": b"only bytes"},
        {},
    ],
)
def test_lines_are_json_with_bytes_as_base64(message: dict[str, Any]) -> None:
    line = exec_server.encode_line(message)

    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line) == {
        key: base64.b64encode(value).decode() if isinstance(value, bytes) else value
        for key, value in message.items()
    }


def start(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["bash", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@pytest.fixture(params=["pidfd", "polling"])
def exits_seen_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the agent notices a command's exit: a pidfd, or looking."""
    if request.param == "polling":
        monkeypatch.setattr(exec_server, "pidfd", lambda pid: None)
    return str(request.param)


@pytest.mark.parametrize(
    ("script", "timeout", "output", "timed_out", "code", "stopped"),
    [
        pytest.param("echo one; echo two >&2; exit 3", 10, b"one\ntwo\n", False, 3, [], id="exit"),
        # Closes its output, then goes on: the exit is still awaited.
        pytest.param(
            "echo early; exec >&- 2>&-; sleep 0.3; exit 4",
            10,
            b"early\n",
            False,
            4,
            [],
            id="closes-output",
        ),
        pytest.param("echo started; sleep 300", 0.3, b"started\n", True, -9, [], id="timeout"),
        # A background process holding the output is stopped after the drain, and named.
        pytest.param(
            "sleep 300 & echo done", 10, b"done\n", False, 0, ["sleep 300"], id="background"
        ),
        pytest.param(
            "sleep 301 & sleep 302 & echo done",
            10,
            b"done\n",
            False,
            0,
            ["sleep 301", "sleep 302"],
            id="two-in-background",
        ),
    ],
)
def test_collect_ends_like_the_local_sandbox(
    exits_seen_by: str,
    script: str,
    timeout: float,
    output: bytes,
    timed_out: bool,
    code: int,
    stopped: list[str],
) -> None:
    process = start(script)
    collected = exec_server.Output(1024)
    assert process.stdout is not None

    ended = exec_server.collect(process, process.stdout, collected, timeout)

    assert (collected.getvalue(), ended, process.returncode) == (
        output,
        (timed_out, stopped),
        code,
    )
    assert group_gone(process.pid)


def group_gone(pgid: int) -> bool:
    """Whether no process of group `pgid` runs (zombies awaiting their reaper aside)."""
    # Up to 10 s, as wait_gone.
    for _ in range(1000):
        running = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                running.append(stat)
        if not running:
            return True
        time.sleep(0.01)
    return False


# --- bounded reads


def reference_lines(
    data: bytes, start: int, count: int, max_line_bytes: int, max_bytes: int, max_scan: int
) -> dict[str, Any]:
    """read_lines the slow way: the whole file split at once."""
    seen = data[:max_scan]
    complete = len(data) <= max_scan
    parts = seen.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    lines: list[bytes] = []
    chars: list[int] = []
    kept = 0
    for index in range(start - 1, min(len(parts), start - 1 + count)):
        if kept >= max_bytes:
            break
        part = parts[index]
        ended = index < len(parts) - 1 or complete or seen.endswith(b"\n")
        if ended and part.endswith(b"\r"):
            part = part[:-1]
        lines.append(part[:max_line_bytes])
        chars.append(len(part.decode("utf-8", errors="replace")))
        kept += len(lines[-1])
    return {
        "lines": lines,
        "chars": chars,
        "total_lines": len(parts),
        "complete": complete,
        "size": len(data),
    }


@pytest.mark.parametrize("seed", range(8))
def test_read_lines_streams_what_a_whole_read_would_show(seed: int, tmp_path: Path) -> None:
    rnd = random.Random(seed)
    pieces = [b"a", b"\n", b"\r", "é".encode(), b"\r\n", b"xyz", "😀".encode()]
    path = tmp_path / "f"
    for _ in range(300):
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 60)))
        numbers = (
            rnd.randint(1, 12),  # start
            rnd.randint(1, 6),  # count
            rnd.randint(1, 8),  # max_line_bytes
            rnd.randint(1, 30),  # max_bytes
            rnd.choice([10**9, rnd.randint(0, 70)]),  # max_scan
        )
        path.write_bytes(data)

        with path.open("rb") as handle:
            got = exec_server.read_lines(handle, *numbers, chunk_size=rnd.randint(1, 9))

        assert got == reference_lines(data, *numbers), (data, numbers)


def test_lines_and_ranged_reads_over_the_protocol(agent: Agent, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"one\r\ntwo\nthree\n")

    agent.send(
        {
            "id": 1,
            "op": "lines",
            "path": "f.txt",
            "start": 2,
            "count": 5,
            "max_line_bytes": 3,
            "max_bytes": 100,
            "max_scan": 100,
        }
    )
    window = agent.receive()
    agent.send({"id": 2, "op": "read", "path": "f.txt", "offset": 5, "limit": 3})
    ranged = agent.receive()

    assert window == {
        "id": 1,
        "ok": True,
        "chars": [3, 5],
        "total_lines": 3,
        "complete": True,
        "size": 15,
        "count": 2,
        "data": base64.b64encode(b"two\nthr").decode(),
    }
    assert base64.b64decode(ranged["data"]) == b"two"
