from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox, PathOutsideTree, SandboxError
from runner.sandbox.base import COMMAND_ENV
from runner.sandbox.local import command_env, is_secret_name
from tests.processes import NAME_LAST, Process, until_gone


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside\n")
    return root


@pytest.fixture
def sandbox(tree: Path) -> LocalSandbox:
    return LocalSandbox(tree)


async def wait_for_file(path: Path) -> str:
    for _ in range(1000):
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


# --- construction


def test_root_is_the_resolved_directory(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "alias").symlink_to(tree)

    assert LocalSandbox(tmp_path / "alias").root == str(tree.resolve())


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")

    with pytest.raises(SandboxError) as raised:
        LocalSandbox(tmp_path / "file")
    assert str(raised.value) == f"sandbox root is not a directory: {tmp_path / 'file'}"
    with pytest.raises(SandboxError) as raised:
        LocalSandbox(tmp_path / "missing")
    assert str(raised.value) == f"sandbox root is not a directory: {tmp_path / 'missing'}"


# --- read and write


async def test_write_creates_parents_and_read_returns_bytes(
    sandbox: LocalSandbox, tree: Path
) -> None:
    await sandbox.write("src/pkg/mod.py", b"print('hi')\n")

    assert (tree / "src" / "pkg" / "mod.py").read_bytes() == b"print('hi')\n"
    assert await sandbox.read("src/pkg/mod.py") == b"print('hi')\n"


async def test_write_replaces_content_keeps_mode_and_leaves_no_temp_file(
    sandbox: LocalSandbox, tree: Path
) -> None:
    script = tree / "run.sh"
    script.write_text("old\n")
    script.chmod(0o751)

    await sandbox.write("run.sh", b"new\n")

    assert script.read_text() == "new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert sorted(p.name for p in tree.iterdir()) == ["run.sh"]


async def test_new_file_mode_follows_the_umask(sandbox: LocalSandbox, tree: Path) -> None:
    previous = os.umask(0o027)
    try:
        await sandbox.write("new.txt", b"x")
    finally:
        os.umask(previous)

    assert stat.S_IMODE((tree / "new.txt").stat().st_mode) == 0o640


async def test_absolute_path_inside_the_tree_is_accepted(sandbox: LocalSandbox, tree: Path) -> None:
    await sandbox.write(str(tree / "abs.txt"), b"abs")

    assert await sandbox.read(str(tree / "abs.txt")) == b"abs"


async def test_write_through_an_inside_symlink_updates_its_target(
    sandbox: LocalSandbox, tree: Path
) -> None:
    (tree / "real.txt").write_text("old")
    (tree / "link.txt").symlink_to("real.txt")

    await sandbox.write("link.txt", b"new")

    assert (tree / "link.txt").is_symlink()
    assert (tree / "real.txt").read_text() == "new"


async def test_read_reports_missing_files_and_directories(
    sandbox: LocalSandbox, tree: Path
) -> None:
    (tree / "dir").mkdir()

    with pytest.raises(FileNotFoundError):
        await sandbox.read("missing.txt")
    with pytest.raises(IsADirectoryError):
        await sandbox.read("dir")


async def test_write_onto_a_directory_is_refused(sandbox: LocalSandbox, tree: Path) -> None:
    (tree / "dir").mkdir()

    with pytest.raises(IsADirectoryError):
        await sandbox.write("dir", b"x")
    assert (tree / "dir").is_dir()


# --- paths that escape the tree


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/secret.txt", "../outside/secret.txt is outside the working tree"),
        (
            "src/../../outside/secret.txt",
            "src/../../outside/secret.txt is outside the working tree",
        ),
        ("..", ".. is outside the working tree"),
    ],
)
async def test_dotdot_out_of_the_tree_is_refused(
    sandbox: LocalSandbox, path: str, message: str
) -> None:
    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read(path)
    assert str(raised.value) == message
    with pytest.raises(PathOutsideTree):
        await sandbox.write(path, b"x")


async def test_dotdot_that_stays_inside_is_accepted(sandbox: LocalSandbox, tree: Path) -> None:
    (tree / "a.txt").write_text("a")

    assert await sandbox.read("src/../a.txt") == b"a"


async def test_absolute_path_elsewhere_is_refused(sandbox: LocalSandbox, tmp_path: Path) -> None:
    target = str(tmp_path / "outside" / "secret.txt")

    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read(target)
    assert str(raised.value) == f"{target} is outside the working tree"
    with pytest.raises(PathOutsideTree):
        await sandbox.write(str(tmp_path / "outside" / "new.txt"), b"x")
    assert not (tmp_path / "outside" / "new.txt").exists()


async def test_file_symlink_out_is_refused(
    sandbox: LocalSandbox, tree: Path, tmp_path: Path
) -> None:
    (tree / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")

    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read("leak.txt")
    assert str(raised.value) == "leak.txt resolves outside the working tree via a symlink"
    with pytest.raises(PathOutsideTree):
        await sandbox.write("leak.txt", b"overwritten")
    assert (tmp_path / "outside" / "secret.txt").read_text() == "outside\n"


async def test_dangling_symlink_out_is_refused(
    sandbox: LocalSandbox, tree: Path, tmp_path: Path
) -> None:
    (tree / "dangling").symlink_to(tmp_path / "outside" / "planted.txt")

    with pytest.raises(PathOutsideTree):
        await sandbox.write("dangling", b"x")
    assert not (tmp_path / "outside" / "planted.txt").exists()


async def test_directory_symlink_out_is_refused(
    sandbox: LocalSandbox, tree: Path, tmp_path: Path
) -> None:
    (tree / "src").mkdir()
    (tree / "src" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)

    with pytest.raises(PathOutsideTree) as raised:
        await sandbox.read("src/out/secret.txt")
    assert str(raised.value) == "src/out/secret.txt resolves outside the working tree via a symlink"
    # A file that does not exist yet is judged by its nearest existing parent.
    with pytest.raises(PathOutsideTree):
        await sandbox.write("src/out/deeper/new.txt", b"x")
    assert not (tmp_path / "outside" / "deeper").exists()
    with pytest.raises(PathOutsideTree):
        await sandbox.run(["pwd"], timeout=10, cwd="src/out")


async def test_cwd_outside_or_missing_is_refused(sandbox: LocalSandbox, tree: Path) -> None:
    (tree / "file.txt").write_text("x")

    with pytest.raises(PathOutsideTree):
        await sandbox.run(["pwd"], timeout=10, cwd="..")
    with pytest.raises(FileNotFoundError):
        await sandbox.run(["pwd"], timeout=10, cwd="missing")
    with pytest.raises(NotADirectoryError):
        await sandbox.run(["pwd"], timeout=10, cwd="file.txt")


# --- run


async def test_run_interleaves_stdout_and_stderr_and_reports_the_exit_code(
    sandbox: LocalSandbox,
) -> None:
    result = await sandbox.run(
        ["bash", "-c", "echo one; echo two >&2; echo three; exit 3"], timeout=10
    )

    assert result.output == b"one\ntwo\nthree\n"
    assert result.exit_code == 3
    assert not result.timed_out


async def test_run_starts_at_the_root_or_in_cwd(sandbox: LocalSandbox, tree: Path) -> None:
    (tree / "sub").mkdir()

    at_root = await sandbox.run(["pwd"], timeout=10)
    in_sub = await sandbox.run(["pwd"], timeout=10, cwd="sub")

    assert at_root.output.decode().strip() == str(tree.resolve())
    assert in_sub.output.decode().strip() == str(tree.resolve() / "sub")


async def test_run_has_no_stdin(sandbox: LocalSandbox) -> None:
    result = await sandbox.run(["cat"], timeout=10)

    assert result.output == b""
    assert result.exit_code == 0


async def test_missing_executable_is_exit_127(sandbox: LocalSandbox) -> None:
    result = await sandbox.run(["no-such-command-xyz", "arg"], timeout=10)

    assert result.exit_code == 127
    assert result.output == b"no-such-command-xyz: command not found\n"


async def test_argv_is_never_a_shell_string(sandbox: LocalSandbox, tree: Path) -> None:
    result = await sandbox.run(["echo", "$(touch pwned)", ";", "rm", "-rf", "."], timeout=10)

    assert result.output == b"$(touch pwned) ; rm -rf .\n"
    assert not (tree / "pwned").exists()


async def test_timeout_kills_the_whole_process_group(sandbox: LocalSandbox, tree: Path) -> None:
    script = (
        # The child's output goes elsewhere, so only the group kill can reach it.
        f"sleep 300 > /dev/null 2>&1 & {NAME_LAST} > child.pid; echo started; sleep 300"
    )

    result = await sandbox.run(["bash", "-c", script], timeout=1)

    assert result.timed_out
    assert result.exit_code == -9
    assert result.output == b"started\n"
    # Read after the kill: known by what it ran.
    child = Process.named((tree / "child.pid").read_text(), ["sleep", "300"])
    assert await until_gone(child)


async def test_background_process_holding_the_output_is_stopped_when_the_command_ends(
    sandbox: LocalSandbox, tree: Path
) -> None:
    result = await sandbox.run(
        ["bash", "-c", f"sleep 300 & {NAME_LAST} > bg.pid; echo done"], timeout=60
    )

    assert not result.timed_out
    assert result.exit_code == 0
    assert result.output == b"done\n"
    child = Process.named((tree / "bg.pid").read_text(), ["sleep", "300"])
    assert await until_gone(child)


async def test_background_process_with_its_own_output_keeps_running(
    sandbox: LocalSandbox, tree: Path
) -> None:
    script = f"sleep 300 > /dev/null 2>&1 & {NAME_LAST} > bg.pid; echo done"

    result = await sandbox.run(["bash", "-c", script], timeout=60)

    child = Process.named((tree / "bg.pid").read_text())
    try:
        assert result.output == b"done\n"
        assert not result.timed_out
        assert child.alive()
    finally:
        os.kill(child.pid, 9)


async def test_cancelling_run_kills_the_process_group(sandbox: LocalSandbox, tree: Path) -> None:
    task = asyncio.create_task(
        sandbox.run(["bash", "-c", f"sleep 300 & {NAME_LAST} > bg.pid; wait"], timeout=60)
    )
    child = Process.named(await wait_for_file(tree / "bg.pid"))

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await until_gone(child)


async def test_secrets_do_not_reach_commands(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-1",
        "OPENAI_BASE_URL": "https://proxy.example/2",
        "NEO_WEBHOOK_SECRET": "hook-3",
        "GH_TOKEN": "gho-4",
        "DEPLOY_PASSWORD": "pw-5",
        "my_service_token": "tok-6",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")

    result = await sandbox.run(["env"], timeout=10)

    output = result.output.decode()
    assert "HARMLESS_SETTING=visible" in output.splitlines()
    for name, value in secrets.items():
        assert name not in output
        assert value not in output


async def test_env_overrides_are_added(sandbox: LocalSandbox) -> None:
    result = await sandbox.run(
        ["bash", "-c", 'echo "$GREETING"'], timeout=10, env={"GREETING": "hello"}
    )

    assert result.output == b"hello\n"


async def test_rg_from_the_ripgrep_wheel_is_found(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")

    result = await sandbox.run(["rg", "--version"], timeout=10)

    assert result.exit_code == 0
    assert result.output.startswith(b"ripgrep ")


# --- the environment, as pure functions


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("ANTHROPIC_BASE_URL", True),
        ("OPENAI_ORG", True),
        ("GEMINI_MODEL", True),
        ("OPENROUTER_REFERER", True),
        ("GOOGLE_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("GH_TOKEN", True),
        ("NEO_HANDLE", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("PGPASSWORD", True),
        ("npm_config__authToken", True),
        ("HOME", False),
        ("PATH", False),
        ("LANG", False),
        ("GITHUB_WORKSPACE", False),
    ],
)
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_command_env_filters_overrides_and_appends_the_scripts_dir() -> None:
    host = {"PATH": "/usr/bin:/bin", "HOME": "/home/me", "OPENAI_API_KEY": "sk"}

    env = command_env(host, {"EXTRA": "1"}, "/venv/bin")

    assert env == {
        "PATH": "/usr/bin:/bin:/venv/bin",
        "HOME": "/home/me",
        **COMMAND_ENV,
        "EXTRA": "1",
    }


def test_command_env_keeps_path_order_when_the_scripts_dir_is_there() -> None:
    env = command_env({"PATH": "/venv/bin:/usr/bin"}, None, "/venv/bin")

    assert env["PATH"] == "/venv/bin:/usr/bin"


def test_command_env_without_path_uses_the_default() -> None:
    env = command_env({}, None, "/venv/bin")

    assert env["PATH"] == f"{os.defpath}:/venv/bin"


async def test_endless_output_is_bounded_but_counted(tmp_path: Path) -> None:
    from runner.sandbox.output_buffer import OUTPUT_LIMIT

    sandbox = LocalSandbox(tmp_path)
    size = OUTPUT_LIMIT + 4 * 1024 * 1024
    result = await sandbox.run(
        ["bash", "-c", f"yes abcdefghijklmnopqrstuvwxyz | head -c {size}"], timeout=60
    )

    assert result.exit_code == 0
    assert len(result.output) == OUTPUT_LIMIT
    assert result.total_bytes == size
    assert result.total_lines == size // 27 + 1
    assert result.output.startswith(b"abcdefghijklmnopqrstuvwxyz\n")


# --- the command runner


async def test_commands_are_children_of_a_runner_that_holds_no_secret(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO_WEBHOOK_SECRET", "hook-7")

    result = await sandbox.run(
        ["bash", "-c", 'echo "$PPID"; tr "\\0" "\\n" < /proc/$PPID/environ || true'], timeout=10
    )

    parent, *environ = result.output.decode().splitlines()
    assert int(parent) != os.getpid()
    assert not any("hook-7" in line for line in environ)
    # Reading the runner's environment may be refused (root without the
    # capabilities it dropped); when it is not, it holds no secret.
    assert all("NEO_WEBHOOK_SECRET" not in line for line in environ)


async def test_the_runner_hides_this_process_from_other_processes(
    sandbox: LocalSandbox,
) -> None:
    import ctypes

    await sandbox.run(["true"], timeout=10)

    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


async def test_a_command_that_kills_the_runner_fails_alone(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxError, match=r"^the local sandbox.s command runner exited$"):
        await sandbox.run(["bash", "-c", "kill -9 $PPID; sleep 5"], timeout=10)

    result = await sandbox.run(["echo", "again"], timeout=10)

    assert result.output == b"again\n"


async def test_aclose_ends_running_commands(sandbox: LocalSandbox, tree: Path) -> None:
    task = asyncio.create_task(
        sandbox.run(["bash", "-c", f"sleep 300 & {NAME_LAST} > bg.pid; wait"], timeout=60)
    )
    child = Process.named(await wait_for_file(tree / "bg.pid"))

    await sandbox.aclose()

    with pytest.raises(SandboxError):
        await task
    assert await until_gone(child)
