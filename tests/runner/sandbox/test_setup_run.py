"""Setup's commands: each stopped at its time limit, and what the report keeps
of a failed one's output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from docker import DockerClient

from runner.sandbox.docker import DockerSandbox
from runner.sandbox.setup_plan import SetupPlan, SetupStep, explicit_plan
from runner.sandbox.setup_run import TAIL_LINES, SetupFailed, output_tail, run_setup
from tests.runner.sandbox.conftest import SANDBOX_IMAGE


def test_the_tail_is_the_last_lines_without_terminal_codes_or_overwritten_progress() -> None:
    output = b"".join(f"line {n}\n".encode() for n in range(50))
    output += b"\x1b[31merror:\x1b[0m no matching distribution\r\n"
    output += b"Downloading 10%\rDownloading 100%\r\n\n   \n"
    tail = output_tail(output).splitlines()
    assert len(tail) == TAIL_LINES
    assert tail[-2:] == ["error: no matching distribution", "Downloading 100%"]
    assert tail[0] == "line 32"


def test_a_long_line_is_cut_and_bad_bytes_are_replaced() -> None:
    tail = output_tail(b"x" * 5000 + b"\n\xff\xfe end")
    first, last = tail.splitlines()
    assert first == "x" * 300
    assert last == "\ufffd\ufffd end"
    assert output_tail(b"") == ""


# --- each command's time limit, in a real docker sandbox

# The command lines of the processes in the sandbox, but this one's.
PROCESSES = (
    "import os; print('\\n'.join(open(f'/proc/{p}/cmdline').read().replace('\\0', ' ')"
    " for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()))"
)


@pytest_asyncio.fixture
async def box(docker_client: DockerClient, tmp_path: Path) -> AsyncIterator[DockerSandbox]:
    tree = tmp_path / "tree"
    tree.mkdir()
    async with DockerSandbox.start(
        tree, image=SANDBOX_IMAGE, job_id="test-setup-limit", client=docker_client
    ) as started:
        yield started


async def test_a_detected_command_past_its_limit_is_stopped_whole_and_setup_goes_on(
    box: DockerSandbox, tmp_path: Path
) -> None:
    slow = SetupStep("sleep 301 & sleep 302; echo never", ecosystem="node", timeout=2)
    plan = SetupPlan("auto", (slow, SetupStep("touch after", ecosystem="go")))

    outcome = await run_setup(box, plan)
    left = await box.run(["python3", "-c", PROCESSES], timeout=30)

    first, second = outcome.steps
    assert first.timed_out
    assert first.ended.startswith("timed out after")
    assert "never" not in first.tail
    assert second.ok
    assert (tmp_path / "tree" / "after").exists()
    processes = left.output.decode()
    assert "neo-agent" in processes  # the listing sees the sandbox's processes
    assert "sleep 30" not in processes


async def test_a_repository_command_past_its_limit_fails_setup_saying_so(
    box: DockerSandbox, tmp_path: Path
) -> None:
    plan = explicit_plan(["sleep 303", "touch after"], {}, timeout=2)

    with pytest.raises(SetupFailed, match=r"command 1 of 2 failed \(timed out after \d+s\)"):
        await run_setup(box, plan)

    assert not (tmp_path / "tree" / "after").exists()
