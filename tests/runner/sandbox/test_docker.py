"""The docker sandbox against the real engine, through the real tools.

Most tests share one sandbox (a container start costs about half a second);
those that change its limits, network or life get their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
import requests
from docker import DockerClient
from docker.errors import APIError, NotFound

from runner.llm.types import JSONObject
from runner.sandbox import PathOutsideTree, SandboxError
from runner.sandbox.base import COMMAND_ENV, UnknownBackground
from runner.sandbox.docker import (
    LABEL_JOB,
    LABEL_OWNER,
    LABEL_SANDBOX,
    LABEL_STARTED,
    DockerSandbox,
    Limits,
    sweep_orphans,
)
from runner.sandbox.environment import container_environment, image_variables
from runner.sandbox.output_buffer import OUTPUT_LIMIT
from runner.sandbox.removal import remove_container
from runner.tools import (
    BashOutputTool,
    BashTool,
    EditFileTool,
    GlobTool,
    GrepTool,
    KillShellTool,
    ReadFileTool,
    ToolContext,
    ToolError,
    ToolOutput,
    WriteFileTool,
)
from tests.docker_bridge import bridge_gateway
from tests.runner.sandbox.conftest import REPO, SANDBOX_IMAGE

MiB = 1024 * 1024
CTX = ToolContext("call-1", lambda event: None)
# One loop for the module, so its tests can share one sandbox.
in_module_loop = pytest.mark.asyncio(loop_scope="module")

# A TCP connection attempt; exit 0 and "connected" only when it succeeds.
CONNECT = (
    "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5);"
    " print('connected')"
)


@dataclass
class Shared:
    sandbox: DockerSandbox
    tree: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    docker_client: DockerClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Shared]:
    tree = tmp_path_factory.mktemp("shared") / "tree"
    tree.mkdir()
    (tree / "README.md").write_text("# shared\n")
    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-shared", client=docker_client
    ) as sandbox:
        yield Shared(sandbox, tree)


@pytest.fixture
def area(request: pytest.FixtureRequest) -> str:
    """A directory name, inside the shared tree, of this test's own."""
    return f"t-{request.node.name.split('[')[0][5:40]}-{secrets.token_hex(3)}"


async def bash(sandbox: DockerSandbox, command: str, timeout: float = 60) -> str:
    output = await BashTool(sandbox)({"command": command, "timeout": timeout}, CTX)
    assert isinstance(output.content, str)
    return output.content


def gone(client: DockerClient, container: str) -> bool:
    try:
        client.api.inspect_container(container)
    except NotFound:
        return True
    return False


class Listener:
    """A TCP server on every host address; counts the connections it accepts."""

    def __init__(self) -> None:
        self._server = socket.create_server(("", 0))
        self._server.settimeout(0.2)
        self.port: int = self._server.getsockname()[1]
        self.accepted = 0
        self._accepted = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            connection.close()
            with self._accepted:
                self.accepted += 1
                self._accepted.notify_all()

    def wait_for(self, count: int) -> None:
        with self._accepted:
            assert self._accepted.wait_for(lambda: self.accepted >= count, 10)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


# --- the container


@in_module_loop
async def test_the_container_is_labelled_bounded_and_locked_down(
    shared: Shared, docker_client: DockerClient
) -> None:
    info = docker_client.api.inspect_container(shared.sandbox.container)
    labels = info["Config"]["Labels"]
    host = info["HostConfig"]

    assert labels[LABEL_SANDBOX] == "1"
    assert labels[LABEL_JOB] == "test-shared"
    assert abs(int(labels[LABEL_STARTED]) - time.time()) < 600
    assert labels[LABEL_OWNER] == f"{socket.gethostname()}:{os.getpid()}"
    assert host["Memory"] == host["MemorySwap"] == 4 * 1024 * MiB
    assert host["NanoCpus"] == 2_000_000_000
    assert host["PidsLimit"] == 512
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["CapDrop"] == ["ALL"]
    # The prepared environment lives on the container's own layer; the rest
    # of the root is root's (see test_commands_run_as_the_sandbox_user...).
    assert host["ReadonlyRootfs"] is False
    assert host["Init"] is True
    assert host["NetworkMode"] == "none"
    assert host["Binds"] == [f"{shared.tree}:/workspace:rw"]
    assert set(host["Tmpfs"]) == {"/tmp", "/var/tmp", "/home/neo"}
    if os.geteuid() == 0:
        assert info["Config"]["User"] == "1000:1000"
    # Neo's variables over the image's, never the host's.
    image = docker_client.images.get(SANDBOX_IMAGE).attrs["Config"]["Env"]
    expected = container_environment(image_variables(image))
    assert dict(entry.split("=", 1) for entry in info["Config"]["Env"]) == expected
    assert expected.items() >= COMMAND_ENV.items()


# What a strong model's habits need: no bytecode in the tree, no pager, no progress bars.
QUIET_ENV = [
    pytest.param("PYTHONDONTWRITEBYTECODE", "1", id="no-bytecode"),
    pytest.param("PAGER", "cat", id="pager"),
    pytest.param("GIT_PAGER", "cat", id="git-pager"),
    pytest.param("PIP_PROGRESS_BAR", "off", id="pip-progress"),
    pytest.param("TQDM_DISABLE", "1", id="tqdm"),
    pytest.param("CI", "1", id="ci"),
]


@in_module_loop
@pytest.mark.parametrize(("name", "value"), QUIET_ENV)
async def test_commands_get_the_quiet_environment(shared: Shared, name: str, value: str) -> None:
    script = f'import os;print(os.environ.get("{name}"))'

    assert await bash(shared.sandbox, f"python3 -c '{script}'") == f"{value}\nexit code: 0"


@in_module_loop
@pytest.mark.parametrize(
    ("workdir", "answer"),
    [
        pytest.param("{area}/sub", "/workspace/{area}/sub\nexit code: 0", id="inside"),
        pytest.param("/workspace/{area}", "/workspace/{area}\nexit code: 0", id="absolute-inside"),
        pytest.param("../etc", "workdir: ../etc is outside the working tree", id="outside"),
        pytest.param("{area}/missing", "workdir: {area}/missing does not exist", id="missing"),
        pytest.param("{area}/f.txt", "workdir: {area}/f.txt is not a directory", id="a-file"),
    ],
)
async def test_workdir_runs_the_command_there_or_is_refused(
    shared: Shared, area: str, workdir: str, answer: str
) -> None:
    (shared.tree / area / "sub").mkdir(parents=True)
    (shared.tree / area / "f.txt").write_text("x\n")
    tool = BashTool(shared.sandbox)
    args: JSONObject = {"command": "pwd", "workdir": workdir.format(area=area)}

    try:
        output = (await tool(args, CTX)).content
    except ToolError as error:
        output = str(error)

    assert output == answer.format(area=area)


@in_module_loop
async def test_commands_run_as_the_sandbox_user_who_owns_the_tree(shared: Shared) -> None:
    output = await bash(shared.sandbox, "id -u; pwd; stat -c %u README.md; touch /usr/x")

    lines = output.splitlines()
    uid = "1000" if os.geteuid() == 0 else str(os.getuid())
    assert lines[:3] == [uid, "/workspace", uid]
    # The root is the image's: only the environment's directory is the user's.
    assert "touch: cannot touch '/usr/x': Permission denied" in output
    assert shared.tree.stat().st_uid == int(uid)


@in_module_loop
async def test_the_oom_killer_takes_commands_before_the_agent(shared: Shared) -> None:
    # The agent lowers its own score again right after the spawn: under load
    # the command can run before that, so it waits (up to 5 s) to see it.
    scores = (
        "cat /proc/self/oom_score_adj; for i in $(seq 50); do"
        ' p=$(cat /proc/$PPID/oom_score_adj); [ "$p" != 1000 ] && break; sleep 0.1; done;'
        " echo $p"
    )

    assert await bash(shared.sandbox, scores) == "1000\n0\nexit code: 0"


@in_module_loop
async def test_scratch_space_is_writable_and_executable(shared: Shared) -> None:
    script = "for d in /tmp /var/tmp $HOME; do printf '#!/bin/sh\\necho ran\\n' > $d/x.sh"
    script += " && chmod +x $d/x.sh && $d/x.sh; done"

    assert await bash(shared.sandbox, script) == "ran\nran\nran\nexit code: 0"


@in_module_loop
async def test_a_go_test_compiles_no_standard_package(shared: Shared) -> None:
    # The image's build cache holds the standard packages tests commonly use:
    # Go ships none compiled, and a cold first `go test` took minutes of CPU.
    script = (
        "d=$(mktemp -d) && cd $d && printf 'module m\\n\\ngo 1.21\\n' > go.mod"
        ' && printf \'package m\\nimport ("fmt"; "strings")\\n'
        'func F() string { return fmt.Sprint(strings.ToUpper("a")) }\\n\' > m.go'
        ' && printf \'package m\\nimport "testing"\\n'
        'func TestF(t *testing.T) { if F() != "A" { t.Fail() } }\\n\' > m_test.go'
        " && go test -x ./... 2>&1 | grep -c -- '/compile .* -std' ; go test ./... | cut -c1-2"
    )

    assert await bash(shared.sandbox, script, timeout=120) == "0\nok\nexit code: 0"


async def test_a_runner_that_is_not_root_runs_commands_as_itself(
    docker_client: DockerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A runner with uid 4321: its tree is its own, and stays so.
    tree = tmp_path / "tree"
    tree.mkdir()
    os.chown(tree, 4321, 4321)
    for name in ("geteuid", "getuid", "getgid"):
        monkeypatch.setattr(os, name, lambda: 4321)

    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-not-root", client=docker_client
    ) as sandbox:
        output = await bash(sandbox, "id -u; id -g; touch made $HOME/home-is-writable && echo ok")

    assert output == "4321\n4321\nok\nexit code: 0"
    assert (tree / "made").stat().st_uid == 4321
    assert tree.stat().st_uid == 4321


# --- files, through the tools


@in_module_loop
async def test_the_file_tools_round_trip_through_the_channel(shared: Shared, area: str) -> None:
    sandbox = shared.sandbox
    path = f"{area}/pkg/mod.py"

    written = await WriteFileTool(sandbox)({"path": path, "content": "x = 1\ny = 'two'\n"}, CTX)
    edited = await EditFileTool(sandbox)(
        {"path": path, "old_string": "x = 1", "new_string": "x = 'it''s \"quoted\"'"}, CTX
    )
    read = await ReadFileTool(sandbox)({"path": path}, CTX)
    grep = await GrepTool(sandbox)(
        {"pattern": "quoted", "path": area, "output_mode": "content"}, CTX
    )
    glob = await GlobTool(sandbox)({"pattern": "**/*.py", "path": area}, CTX)

    assert written == ToolOutput("wrote 2 lines (16 bytes) to " + path)
    assert not edited.is_error
    assert read.content == "     1\tx = 'it''s \"quoted\"'\n     2\ty = 'two'"
    assert grep.content == f"{path}:1:x = 'it''s \"quoted\"'"
    assert glob.content == path
    assert (shared.tree / path).read_text() == "x = 'it''s \"quoted\"'\ny = 'two'\n"


@in_module_loop
async def test_binary_data_with_nul_bytes_and_quotes_round_trips(shared: Shared, area: str) -> None:
    data = bytes(range(256)) + b"'\"$(touch pwned)`id`\\\n\0\r\n" * 100

    await shared.sandbox.write(f"{area}/blob.bin", data)

    assert await shared.sandbox.read(f"{area}/blob.bin") == data
    assert (shared.tree / area / "blob.bin").read_bytes() == data
    digest = await bash(shared.sandbox, f"sha256sum {area}/blob.bin | cut -d' ' -f1")
    assert digest.splitlines()[0] == hashlib.sha256(data).hexdigest()
    assert not (shared.tree / "pwned").exists()


@in_module_loop
async def test_files_written_in_the_sandbox_are_readable_on_the_host(
    shared: Shared, area: str
) -> None:
    await bash(shared.sandbox, f"mkdir -p {area} && echo from-bash > {area}/made.txt")
    await shared.sandbox.write(f"{area}/written.txt", b"from-write\n")

    made = shared.tree / area / "made.txt"
    assert made.read_text() == "from-bash\n"
    assert (shared.tree / area / "written.txt").read_text() == "from-write\n"
    if os.geteuid() == 0:
        assert made.stat().st_uid == 1000


@in_module_loop
async def test_write_keeps_the_mode_and_leaves_no_temp_file(shared: Shared, area: str) -> None:
    await bash(
        shared.sandbox, f"mkdir {area} && echo old > {area}/run.sh && chmod 751 {area}/run.sh"
    )

    await shared.sandbox.write(f"{area}/run.sh", b"new\n")

    assert (shared.tree / area / "run.sh").read_text() == "new\n"
    assert (shared.tree / area / "run.sh").stat().st_mode & 0o777 == 0o751
    assert sorted(p.name for p in (shared.tree / area).iterdir()) == ["run.sh"]


@in_module_loop
async def test_missing_files_and_directories_raise_like_the_local_sandbox(
    shared: Shared, area: str
) -> None:
    await bash(shared.sandbox, f"mkdir -p {area}/dir && touch {area}/file")

    with pytest.raises(FileNotFoundError):
        await shared.sandbox.read(f"{area}/missing")
    with pytest.raises(IsADirectoryError):
        await shared.sandbox.read(f"{area}/dir")
    with pytest.raises(IsADirectoryError):
        await shared.sandbox.write(f"{area}/dir", b"x")
    with pytest.raises(FileNotFoundError):
        await shared.sandbox.run(["pwd"], timeout=10, cwd=f"{area}/missing")
    with pytest.raises(NotADirectoryError):
        await shared.sandbox.run(["pwd"], timeout=10, cwd=f"{area}/file")
    with pytest.raises(ToolError) as raised:
        await ReadFileTool(shared.sandbox)({"path": f"{area}/missing"}, CTX)
    assert str(raised.value) == f"{area}/missing does not exist"


@in_module_loop
async def test_absolute_paths_inside_the_tree_are_accepted(shared: Shared, area: str) -> None:
    await shared.sandbox.write(f"/workspace/{area}/abs.txt", b"abs")

    assert await shared.sandbox.read(f"{area}/abs.txt") == b"abs"
    result = await shared.sandbox.run(["pwd"], timeout=10, cwd=f"/workspace/{area}")
    assert result.output == f"/workspace/{area}\n".encode()


# --- paths that escape the tree


@in_module_loop
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../etc/passwd", "../etc/passwd is outside the working tree"),
        ("src/../../etc/passwd", "src/../../etc/passwd is outside the working tree"),
        ("..", ".. is outside the working tree"),
        ("/etc/passwd", "/etc/passwd is outside the working tree"),
        ("bad\0name", "'bad\\x00name' is not a valid path (NUL byte)"),
    ],
)
async def test_paths_out_of_the_tree_are_refused(shared: Shared, path: str, message: str) -> None:
    with pytest.raises(PathOutsideTree) as raised:
        await shared.sandbox.read(path)
    assert str(raised.value) == message
    with pytest.raises(PathOutsideTree):
        await shared.sandbox.write(path, b"x")
    with pytest.raises(ToolError) as refused:
        await ReadFileTool(shared.sandbox)({"path": path}, CTX)
    assert str(refused.value) == message


@in_module_loop
async def test_symlinks_out_of_the_tree_are_refused(shared: Shared, area: str) -> None:
    sandbox = shared.sandbox
    await bash(
        sandbox,
        f"mkdir -p {area}/src && ln -s /etc/hostname {area}/leak.txt"
        f" && ln -s /etc {area}/src/out && ln -s /tmp/planted {area}/dangling",
    )

    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read(f"{area}/leak.txt")
    assert str(raised.value) == f"{area}/leak.txt resolves outside the working tree via a symlink"
    with pytest.raises(PathOutsideTree):
        await sandbox.write(f"{area}/leak.txt", b"overwritten")
    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read(f"{area}/src/out/passwd")
    assert str(raised.value) == (
        f"{area}/src/out/passwd resolves outside the working tree via a symlink"
    )
    with pytest.raises(PathOutsideTree):
        await sandbox.write(f"{area}/src/out/deeper/new.txt", b"x")
    with pytest.raises(PathOutsideTree):
        await sandbox.write(f"{area}/dangling", b"x")
    with pytest.raises(PathOutsideTree):
        await sandbox.run(["pwd"], timeout=10, cwd=f"{area}/src/out")
    with pytest.raises(PathOutsideTree):
        await sandbox.run(["pwd"], timeout=10, cwd="..")
    assert "No such file" in await bash(sandbox, "ls /tmp/planted")
    with pytest.raises(ToolError, match="via a symlink"):
        await GrepTool(sandbox)({"pattern": "root", "path": f"{area}/src/out"}, CTX)


# --- commands


@in_module_loop
async def test_run_interleaves_output_and_reports_the_exit_code(shared: Shared) -> None:
    result = await shared.sandbox.run(
        ["bash", "-c", "echo one; echo two >&2; echo three; exit 3"], timeout=10
    )

    assert result.output == b"one\ntwo\nthree\n"
    assert result.exit_code == 3
    assert not result.timed_out


@in_module_loop
async def test_run_takes_argv_cwd_and_env_without_a_shell(shared: Shared, area: str) -> None:
    await bash(shared.sandbox, f"mkdir {area}")

    echoed = await shared.sandbox.run(["echo", "$(touch pwned)", ";", "'\"x"], timeout=10)
    where = await shared.sandbox.run(["pwd"], timeout=10, cwd=area)
    env = await shared.sandbox.run(
        ["bash", "-c", 'echo "$GREETING"'], timeout=10, env={"GREETING": "hello"}
    )
    stdin = await shared.sandbox.run(["cat"], timeout=10)
    missing = await shared.sandbox.run(["no-such-command-xyz"], timeout=10)

    assert echoed.output == b"$(touch pwned) ; '\"x\n"
    assert not (shared.tree / "pwned").exists()
    assert where.output == f"/workspace/{area}\n".encode()
    assert env.output == b"hello\n"
    assert (stdin.exit_code, stdin.output) == (0, b"")
    assert (missing.exit_code, missing.output) == (127, b"no-such-command-xyz: command not found\n")


async def wait_until_gone(sandbox: DockerSandbox, pid: str) -> str:
    """The process state of `pid` in the sandbox, once it is gone or after 5 s."""
    check = (
        f"for i in $(seq 50); do [ -d /proc/{pid} ] || break; sleep 0.1; done; ls -d /proc/{pid}"
    )
    return await bash(sandbox, check)


@in_module_loop
async def test_timeout_kills_the_whole_process_group(shared: Shared, area: str) -> None:
    script = (
        f"mkdir {area}; sleep 300 > /dev/null 2>&1 & echo $! > {area}/child.pid;"
        " echo started; sleep 300"
    )

    result = await BashTool(shared.sandbox)({"command": script, "timeout": 1}, CTX)

    assert result.is_error
    assert result.content == (
        "started\nexit code: -9\ntimed out after 1s; the process group was killed"
    )
    child = (shared.tree / area / "child.pid").read_text().strip()
    assert "No such file" in await wait_until_gone(shared.sandbox, child)


@in_module_loop
async def test_background_process_holding_the_output_is_stopped(shared: Shared, area: str) -> None:
    result = await shared.sandbox.run(
        ["bash", "-c", f"mkdir {area}; sleep 300 & echo $! > {area}/bg.pid; echo done"],
        timeout=60,
    )

    assert (result.exit_code, result.output, result.timed_out) == (0, b"done\n", False)
    assert (result.stopped_count, result.stopped) == (1, ("sleep 300",))
    child = (shared.tree / area / "bg.pid").read_text().strip()
    assert "No such file" in await wait_until_gone(shared.sandbox, child)


@in_module_loop
@pytest.mark.parametrize(
    ("command", "stopped"),
    [
        pytest.param("sleep 300 & echo done", "1 background process", id="one"),
        pytest.param("sleep 301 & sleep 302 & echo done", "2 background processes", id="two"),
    ],
)
async def test_the_bash_tool_names_what_it_stopped(
    shared: Shared, command: str, stopped: str
) -> None:
    output = await bash(shared.sandbox, command)

    assert output.startswith(f"done\nstopped {stopped} left running")
    assert output.endswith("\nexit code: 0")


async def background_until(sandbox: DockerSandbox, ident: str, want: bytes) -> bytes:
    seen = b""
    for _ in range(500):
        seen += (await sandbox.background_output(ident)).output
        if want in seen:
            return seen
        await asyncio.sleep(0.01)
    raise AssertionError(f"{ident} never printed {want!r}; saw {seen!r}")


@in_module_loop
@pytest.mark.parametrize(
    ("command", "want", "code"),
    [
        pytest.param("echo hi; exit 3", b"hi\n", 3, id="exits"),
        pytest.param("echo listening; sleep 300", b"listening\n", None, id="server"),
    ],
)
async def test_a_background_command_runs_between_calls_until_stopped(
    shared: Shared, command: str, want: bytes, code: int | None
) -> None:
    ident = await shared.sandbox.start_background(["bash", "-c", f"echo $$; {command}"])

    seen = await background_until(shared.sandbox, ident, want)
    pid = seen.split(b"\n")[0].decode()
    for _ in range(500):
        got = await shared.sandbox.background_output(ident)
        if got.exit_code == code:
            break
        await asyncio.sleep(0.01)
    assert got.exit_code == code
    assert "exit code: 0" in await bash(shared.sandbox, "true")  # another call meanwhile

    stopped = await shared.sandbox.stop_background(ident)

    assert stopped.exit_code == (-9 if code is None else code)
    assert "No such file" in await wait_until_gone(shared.sandbox, pid)
    with pytest.raises(UnknownBackground):
        await shared.sandbox.background_output(ident)


@in_module_loop
async def test_the_background_tools_drive_the_docker_sandbox(shared: Shared, area: str) -> None:
    (shared.tree / area).mkdir()
    started = await BashTool(shared.sandbox)(
        {"command": "pwd; sleep 300", "run_in_background": True, "workdir": area}, CTX
    )
    assert isinstance(started.content, str)
    ident = started.content.split()[5].rstrip(":")
    await background_until(shared.sandbox, ident, b"\n")

    output = await KillShellTool(shared.sandbox)({"id": ident}, CTX)

    assert output.content == f"{ident} stopped; exit code: -9"
    with pytest.raises(ToolError, match=f"no background command {ident}"):
        await BashOutputTool(shared.sandbox)({"id": ident}, CTX)


async def test_closing_the_sandbox_stops_background_commands(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    async with DockerSandbox.start(
        tmp_path, image=SANDBOX_IMAGE, job_id="test-background", client=docker_client
    ) as sandbox:
        ident = await sandbox.start_background(["bash", "-c", "echo up; sleep 300"])
        await background_until(sandbox, ident, b"up\n")
        container = sandbox.container

    assert gone(docker_client, container)


@in_module_loop
async def test_cancelling_run_kills_the_process_group(shared: Shared, area: str) -> None:
    await bash(shared.sandbox, f"mkdir {area}")
    task = asyncio.create_task(
        shared.sandbox.run(["bash", "-c", f"sleep 300 & echo $! > {area}/bg.pid; wait"], timeout=60)
    )
    pid_file = shared.tree / area / "bg.pid"
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert "No such file" in await wait_until_gone(shared.sandbox, pid_file.read_text().strip())


@in_module_loop
async def test_commands_run_concurrently_over_the_one_channel(shared: Shared, area: str) -> None:
    # Each command waits for all the others to have started: run one after
    # the other, they would time out.
    count = 6
    await bash(shared.sandbox, f"mkdir {area}")
    script = (
        f"touch {area}/$0; until [ $(ls {area} | wc -l) -ge {count} ]; do sleep 0.05; done; echo $0"
    )

    results = await asyncio.gather(
        *(shared.sandbox.run(["bash", "-c", script, str(n)], timeout=20) for n in range(count))
    )

    assert [r.output for r in results] == [f"{n}\n".encode() for n in range(count)]
    assert not any(r.timed_out for r in results)


@in_module_loop
async def test_long_output_keeps_head_and_tail_with_the_totals(shared: Shared) -> None:
    lines = 3_000_000  # "line NNNNNNN\n": 13 bytes each, about 39 MB
    result = await shared.sandbox.run(
        ["bash", "-c", f"seq -f 'line %07.0f' 1 {lines}"], timeout=120
    )

    assert result.exit_code == 0
    assert result.total_bytes == 13 * lines
    assert result.total_lines == lines
    assert len(result.output) == OUTPUT_LIMIT
    assert result.output.startswith(b"line 0000001\nline 0000002\n")
    assert result.output.endswith(b"line 3000000\n")


@in_module_loop
async def test_the_agent_survives_a_command_killing_python_processes(shared: Shared) -> None:
    # Spelled so that the command's own bash does not match.
    script = "p=pyth n=neo-; pkill -f ${p}on; pkill ${p}on3; pkill -f ${n}agent; kill 1; true"

    await bash(shared.sandbox, script)

    assert await bash(shared.sandbox, "echo still here") == "still here\nexit code: 0"


# --- security


async def test_no_secret_reaches_the_sandbox(
    docker_client: DockerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghs_" + secrets.token_hex(18)
    api_key = "sk-ant-api03-" + secrets.token_hex(24)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "NEO_GITHUB_INSTALLATION_TOKEN"):
        monkeypatch.setenv(name, token)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.setenv(name, api_key)
    tree = tmp_path / "tree"
    tree.mkdir()
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run(
        [*git, "remote", "add", "origin", "https://github.com/octo/repo.git"],
        check=True,
        timeout=30,
    )
    (tree / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "a"], check=True, timeout=30)

    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-secrets", client=docker_client
    ) as sandbox:
        # Each command with what its output must show, so none passes empty.
        checks = {
            "env": "HOME=/home/neo",
            "cat /proc/*/environ | tr '\\0' '\\n'": "PATH=/opt/neo-env/venv/bin:",
            "cat /proc/*/cmdline | tr '\\0' ' '": "neo-agent",
            "cat .git/config": "https://github.com/octo/repo.git",
            "git config --list --show-origin; git log --format=%an": "remote.origin.url",
            f"grep -rlsF -e {token[:12]} -e {api_key[:16]} /etc /home /tmp /workspace /run;"
            " echo searched": "searched",
        }
        for command, expected in checks.items():
            output = await bash(sandbox, command)
            assert expected in output, command
            for secret in (token, api_key, token[:12], api_key[:16]):
                if secret in command:
                    continue
                assert secret not in output, command
            assert "ANTHROPIC" not in output, command
            assert "GITHUB_TOKEN" not in output, command


@in_module_loop
async def test_without_network_nothing_outside_is_reachable(
    shared: Shared, docker_client: DockerClient, listener: Listener
) -> None:
    gateway = bridge_gateway(docker_client)
    # The server answers on the host, so only the sandbox's isolation stops it.
    with socket.create_connection((gateway, listener.port), 5):
        pass
    listener.wait_for(1)

    for host, port in [("127.0.0.1", listener.port), (gateway, listener.port), ("pypi.org", 443)]:
        output = await bash(shared.sandbox, f'python3 -c "{CONNECT}" {host} {port}')
        assert "connected" not in output, host
        assert "exit code: 1" in output, host
    assert listener.accepted == 1
    assert await bash(shared.sandbox, "ls /sys/class/net") == "lo\nexit code: 0"


async def test_a_fork_bomb_ends_as_a_tool_result_and_the_sandbox_goes_on(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    async with DockerSandbox.start(
        tmp_path,
        image=SANDBOX_IMAGE,
        job_id="test-fork-bomb",
        limits=Limits(pids=128),
        client=docker_client,
    ) as sandbox:
        bomb = await BashTool(sandbox)({"command": ":(){ :|:& };:", "timeout": 10}, CTX)
        after = await bash(sandbox, "echo ok")

    assert isinstance(bomb.content, str)
    # It did hit the limit, and ended as a result the model reads.
    assert "fork: retry: Resource temporarily unavailable" in bomb.content
    assert "exit code: " in bomb.content
    assert after == "ok\nexit code: 0"


async def test_a_memory_hog_ends_as_a_tool_result_and_the_sandbox_goes_on(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    async with DockerSandbox.start(
        tmp_path,
        image=SANDBOX_IMAGE,
        job_id="test-memory-hog",
        limits=Limits(memory=256 * MiB),
        client=docker_client,
    ) as sandbox:
        hog = await bash(
            sandbox, "python3 -c \"x = b'a' * (512 * 1024 * 1024); print('allocated')\""
        )
        after = await bash(sandbox, "echo ok")
        state = docker_client.api.inspect_container(sandbox.container)["State"]

    assert "allocated" not in hog
    assert hog.endswith("exit code: -9")
    assert after == "ok\nexit code: 0"
    assert state["Running"] is True


async def test_a_dead_channel_fails_every_call_with_one_clear_line(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    async with DockerSandbox.start(
        tmp_path, image=SANDBOX_IMAGE, job_id="test-dead-channel", client=docker_client
    ) as sandbox:
        with pytest.raises(SandboxError) as pending:
            await sandbox.run(["bash", "-c", "kill -9 $PPID; sleep 60"], timeout=120)
        with pytest.raises(SandboxError) as later:
            await sandbox.read("anything")

    assert str(pending.value) == "the sandbox stopped (exit code 137)"
    assert str(later.value) == str(pending.value)


# --- lifecycle


async def test_the_container_is_removed_when_the_block_ends(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    async with DockerSandbox.start(
        tmp_path, image=SANDBOX_IMAGE, job_id="test-exit", client=docker_client
    ) as sandbox:
        assert not gone(docker_client, sandbox.container)

    assert gone(docker_client, sandbox.container)


async def test_the_container_is_removed_after_an_exception(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    names: list[str] = []

    async def job() -> None:
        async with DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id="test-exception", client=docker_client
        ) as sandbox:
            names.append(sandbox.container)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await job()

    assert gone(docker_client, names[0])


async def test_the_container_is_removed_after_cancellation(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def job() -> None:
        async with DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id="test-cancel", client=docker_client
        ) as sandbox:
            started.set_result(sandbox.container)
            await sandbox.run(["sleep", "300"], timeout=600)

    task = asyncio.create_task(job())
    name = await started
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert gone(docker_client, name)


async def test_a_missing_image_is_one_clear_error(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    with pytest.raises(SandboxError) as raised:
        async with DockerSandbox.start(
            tmp_path, image="neo-no-such-image:never", job_id="test-image", client=docker_client
        ):
            pass

    assert str(raised.value) == (
        "sandbox image neo-no-such-image:never not found (build it with scripts/build-images)"
    )


RUNNER = """
import asyncio, signal, sys
from pathlib import Path
from runner.sandbox.docker import DockerSandbox

tree, image, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

async def main() -> None:
    if mode == "sigterm":
        # What neo's CLI does: SIGTERM ends the run by cancelling it.
        task = asyncio.current_task()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    start = DockerSandbox.start(tree, image=image, job_id="test-runner-" + mode)
    if mode == "loop-ends":
        # Entered and never exited: the loop's teardown must still remove it.
        sandbox = await start.__aenter__()
        print(sandbox.container, flush=True)
        return
    async with start as sandbox:
        print(sandbox.container, flush=True)
        await sandbox.run(["sleep", "300"], timeout=600)
        print("the sleep ended", flush=True)

asyncio.run(main())
"""


class Runner:
    """A runner process (RUNNER) holding one sandbox."""

    def __init__(self, tree: Path, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", RUNNER, str(tree), SANDBOX_IMAGE, mode],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    async def container(self) -> str:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 60)
        return line.strip()

    def end(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        self.process.wait(30)


@pytest.mark.parametrize(
    ("mode", "signum"),
    [("sigint", signal.SIGINT), ("sigterm", signal.SIGTERM), ("loop-ends", None)],
)
async def test_the_container_is_removed_when_the_runner_is_stopped(
    docker_client: DockerClient, tmp_path: Path, mode: str, signum: int | None
) -> None:
    runner = Runner(tmp_path, mode)
    try:
        name = await runner.container()
        if signum is not None:
            await asyncio.sleep(0.3)
            assert docker_client.api.inspect_container(name)["State"]["Running"]
            runner.end(signum)
        else:
            runner.process.wait(30)
    finally:
        runner.end(signal.SIGKILL)

    assert gone(docker_client, name)


async def test_sweep_removes_the_container_of_a_runner_killed_with_sigkill(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    runner = Runner(tmp_path, "sigkill")
    try:
        container = docker_client.api.inspect_container(await runner.container())["Id"]
    finally:
        runner.end(signal.SIGKILL)

    # With its runner gone the agent ends its commands and the container stops.
    for _ in range(100):
        if not docker_client.api.inspect_container(container)["State"]["Running"]:
            break
        await asyncio.sleep(0.1)
    assert not docker_client.api.inspect_container(container)["State"]["Running"]

    # Another test's sweep on this host may remove it first, even while this
    # one runs (checking before sweeping raced with it): either way a sweep did.
    removed = await asyncio.to_thread(sweep_orphans, docker_client, max_age=24 * 3600)

    assert gone(docker_client, container), removed


@in_module_loop
async def test_sweep_keeps_live_sandboxes_and_removes_old_ones(
    shared: Shared, docker_client: DockerClient
) -> None:
    old = docker_client.api.create_container(
        SANDBOX_IMAGE,
        command=["true"],
        labels={
            LABEL_SANDBOX: "1",
            LABEL_JOB: "test-old",
            LABEL_STARTED: str(int(time.time()) - 7200),
            # A runner elsewhere, which this host cannot check.
            LABEL_OWNER: "another-host:1",
        },
    )["Id"]

    removed = await asyncio.to_thread(sweep_orphans, docker_client, max_age=3600)

    assert old in removed
    assert gone(docker_client, old)
    assert not gone(docker_client, shared.sandbox.container)
    assert await bash(shared.sandbox, "echo alive") == "alive\nexit code: 0"


async def test_a_removal_that_finds_another_under_way_returns_once_it_is_gone(
    docker_client: DockerClient,
) -> None:
    """The engine answers 409 while another removal (a sweep's) runs: the
    sandbox's own removal still returns only once the container is gone."""
    container = docker_client.api.create_container(
        SANDBOX_IMAGE, command=["sleep", "600"], labels={LABEL_JOB: "test-removal-race"}
    )["Id"]
    docker_client.api.start(container)
    # Another process is removing it: the engine says so, and ends it a moment later.
    api = docker_client.api
    real_remove = api.remove_container

    def under_way(*args: object, **kwargs: object) -> None:
        def remove_later() -> None:
            time.sleep(0.5)
            real_remove(container, force=True, v=True)

        threading.Thread(target=remove_later, daemon=True).start()
        conflict = requests.Response()
        conflict.status_code, conflict.reason = 409, "Conflict"
        raise APIError("removal already in progress", conflict)

    api.remove_container = under_way  # type: ignore[method-assign]
    try:
        removed = await asyncio.to_thread(remove_container, docker_client, container)
    finally:
        api.remove_container = real_remove  # type: ignore[method-assign]
        with contextlib.suppress(NotFound):
            real_remove(container, force=True, v=True)

    assert removed is False  # not this call's removal
    assert gone(docker_client, container)
