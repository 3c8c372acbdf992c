"""Running a task's hidden tests on a tree, in a fresh docker sandbox of their own.

The tree is a host directory: a checkout of the task's bundle, with whatever
the agent or the task's fix changed. Its test files are put back as the base
has them, the hidden tests applied, and the language's runner started in a
new container (no network), its report written to a file in the tree and
read on the host whole (a command's output in the sandbox keeps only its head
and tail). Trees side by side under one directory (a task's base and its fix,
when a task is checked) share one sandbox, run one after the other.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.quality.gitops import apply_patch, patch_paths, restore_paths
from bench.quality.results import Outcome, parse
from bench.quality.taskset import Task
from runner.sandbox.base import Sandbox
from runner.sandbox.factory import SandboxChoice, open_sandbox

__all__ = [
    "TEST_COMMANDS",
    "TestRun",
    "run_hidden_tests",
    "run_hidden_tests_side_by_side",
    "runner_command",
]

# How each runner is started, its report to stdout.
TEST_COMMANDS = {
    "pytest": "python3 -m pytest -rA -p no:cacheprovider",
    "go": "go test -json ./...",
    "node": "node --test --test-reporter=tap",
}
# No module is downloaded: a task's tests run with what the image carries. go
# vet's checks, which `go test` runs first, are left out: they judge style, not
# behaviour, and cost seconds on a cold build cache (each sandbox's is).
_ENV = {"go": {"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-vet=off"}}
_LOG = ".neo-bench-tests.log"
# pytest's default test module names.
_TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_TAIL = 4000


@dataclass(frozen=True, slots=True)
class TestRun:
    """One run of the hidden tests: each test's outcome, and how the run went."""

    outcomes: Mapping[str, Outcome]
    exit_code: int
    timed_out: bool
    seconds: float
    # The report's last characters, for a reader to see why.
    tail: str = field(repr=False, default="")


async def run_hidden_tests(
    task: Task, tree: Path, base: str, *, image: str | None, name: str
) -> TestRun:
    """The hidden tests of `task` on `tree` (a checkout whose base commit is `base`).

    `name` tells this run's container apart (letters, digits, '.', '_', '-').
    Raises BenchGitError when the hidden tests do not apply, SandboxError or
    ConfigError when the sandbox cannot start.
    """
    await _with_hidden_tests(task, tree, base)
    async with open_sandbox(SandboxChoice("docker", image), tree, job_id=name) as box:
        return await _run(box, task, tree, cwd=None)


async def run_hidden_tests_side_by_side(
    task: Task, root: Path, trees: Sequence[tuple[Path, str]], *, image: str | None, name: str
) -> list[TestRun]:
    """The hidden tests of `task` on each of `trees` (checkouts directly under
    `root`, each with its base commit), in order, in one sandbox on `root`.

    Each run has its tree to itself, as `run_hidden_tests` gives it; the
    sandbox (its home, its caches) is shared, and started once. Raises as
    `run_hidden_tests` does.
    """
    for tree, base in trees:
        if tree.parent != root:
            raise ValueError(f"{tree} is not directly under {root}")
        await _with_hidden_tests(task, tree, base)
    async with open_sandbox(SandboxChoice("docker", image), root, job_id=name) as box:
        return [await _run(box, task, tree, cwd=tree.name) for tree, _ in trees]


async def _with_hidden_tests(task: Task, tree: Path, base: str) -> None:
    """`tree`'s test files as the base has them, then the hidden tests applied."""
    await restore_paths(tree, base, patch_paths(task.tests))
    await apply_patch(tree, task.tests, what=f"task {task.id}: tests.patch")


def runner_command(task: Task, tree: Path) -> str:
    """The shell command that runs `task`'s hidden tests on `tree`, its report to stdout.

    pytest runs the test files the graded tests live in, as SWE-bench runs
    the files of its test patch: a real project's whole suite can take a
    minute where its affected module takes a second (or not even collect
    without its development dependencies), and no other test's outcome is
    read. A task being authored, whose graded tests are yet to be found, runs
    the test modules its hidden tests leave in the tree.
    """
    command = TEST_COMMANDS[task.runner]
    if task.runner != "pytest":
        return command
    tests = (*task.spec.fail_to_pass, *task.spec.pass_to_pass)
    if tests:
        files = sorted({test.split("::", 1)[0] for test in tests})
    else:
        touched = patch_paths(task.tests)
        files = sorted(p for p in touched if _TEST_MODULE.search(p) and (tree / p).is_file())
    if not files:
        return command
    return " ".join([command, "--", *(shlex.quote(file) for file in files)])


async def _run(box: Sandbox, task: Task, tree: Path, *, cwd: str | None) -> TestRun:
    """The language's runner in `box` on `tree` (`cwd` in the sandbox's tree)."""
    command = runner_command(task, tree)
    log = tree / _LOG
    started = time.monotonic()
    done = await box.run(
        ["bash", "-c", f"{command} >{_LOG} 2>&1"],
        timeout=task.spec.test_timeout,
        cwd=cwd,
        env=_ENV.get(task.runner, {}),
    )
    seconds = time.monotonic() - started
    try:
        report = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        report = done.output.decode(errors="replace")
    finally:
        log.unlink(missing_ok=True)
    return TestRun(
        outcomes=parse(task.runner, report),
        exit_code=done.exit_code,
        timed_out=done.timed_out,
        seconds=seconds,
        tail=report[-_TAIL:],
    )
