"""The harness proven on one task of each language: the scripted no-op resolves none.

It changes nothing, on the same job path as the oracle (test_oracle.py), so
each task must grade unresolved, for the right reason: its FAIL_TO_PASS
tests fail and its PASS_TO_PASS tests pass.
"""

from __future__ import annotations

import functools

from bench.quality.cli import run_tasks
from bench.quality.scripted import scripted_factory
from bench.quality.taskset import Task
from bot.config import RepoConfig


async def test_the_noop_resolves_no_task(
    bench_image: str, one_task_per_language: list[Task]
) -> None:
    tasks = one_task_per_language
    results = await run_tasks(
        tasks,
        factory=functools.partial(scripted_factory, "noop"),
        config=RepoConfig(),
        image=bench_image,
        parallel=2,
    )
    assert [r.id for r in results if r.resolved] == []
    assert {(r.conclusion, r.error) for r in results} == {("no_changes", None)}
    # Unresolved for the right reason: the hidden tests that need the fix failed,
    # the ones that did not still passed.
    for result, task in zip(results, tasks, strict=True):
        assert result.fail_to_pass_failed == task.spec.fail_to_pass
        assert result.pass_to_pass_failed == ()
