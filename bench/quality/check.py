"""`--check`: every task is sound without a model.

Sound means, by SWE-bench's rule: on the base commit with the hidden tests,
every FAIL_TO_PASS test fails and every PASS_TO_PASS test passes; with the
task's real fix applied too, every one of them passes. Each run has a fresh
checkout of its own, as grading does; the two share one sandbox, started for
the task (authoring.base_and_fixed).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.quality.authoring import base_and_fixed
from bench.quality.gitops import BenchGitError
from bench.quality.results import grade
from bench.quality.taskset import Task
from runner.sandbox.base import SandboxError
from runner.text import one_line

__all__ = ["Checked", "check_task", "check_tasks"]


@dataclass(frozen=True, slots=True)
class Checked:
    """One task's check: sound or not, and the first thing wrong."""

    id: str
    language: str
    sound: bool
    problem: str | None
    seconds: float


async def check_task(task: Task, *, image: str | None) -> Checked:
    """Whether `task`'s hidden tests fail on its base and pass with its fix."""
    started = time.monotonic()
    try:
        problem = await _problem(task, image)
    except (BenchGitError, SandboxError) as error:
        problem = one_line(error)
    seconds = time.monotonic() - started
    return Checked(task.id, task.language, problem is None, problem, seconds)


async def check_tasks(
    tasks: Sequence[Task], *, image: str | None, parallel: int = 2
) -> list[Checked]:
    """Each of `tasks` checked, `parallel` at a time, in the order given."""
    gate = asyncio.Semaphore(parallel)

    async def one(task: Task) -> Checked:
        async with gate:
            return await check_task(task, image=image)

    return list(await asyncio.gather(*(one(task) for task in tasks)))


async def _problem(task: Task, image: str | None) -> str | None:
    spec = task.spec
    with tempfile.TemporaryDirectory(prefix=f"neo-check-{task.id}-") as scratch:
        before, after = await base_and_fixed(task, Path(scratch), image=image)
    if before.timed_out or after.timed_out:
        which = "on the base" if before.timed_out else "with the fix"
        return f"the hidden tests timed out {which} (test_timeout {spec.test_timeout:g}s)"
    passed_before = [t for t in spec.fail_to_pass if before.outcomes.get(t) == "passed"]
    if passed_before:
        return f"FAIL_TO_PASS test passes without the fix: {passed_before[0]}"
    broken = grade(before.outcomes, (), spec.pass_to_pass).pass_to_pass_failed
    if broken:
        return f"PASS_TO_PASS test does not pass on the base: {broken[0]}"
    fixed = grade(after.outcomes, spec.fail_to_pass, spec.pass_to_pass)
    if fixed.fail_to_pass_failed:
        return f"FAIL_TO_PASS test does not pass with the fix: {fixed.fail_to_pass_failed[0]}"
    if fixed.pass_to_pass_failed:
        return f"PASS_TO_PASS test does not pass with the fix: {fixed.pass_to_pass_failed[0]}"
    return None
