"""The harness proven on one task of each language: the scripted oracle resolves each.

It applies each task's real fix through the agent's shell tool, on the job
path any model takes (the worker's job_spec, runner.job.run: clone, docker
sandbox, tools, commit, push); each task is graded by its hidden tests in a
fresh sandbox. The no-op's run is in test_noop.py: a file of its own, so the
suite's workers run the two at once. That every task of the set is sound
(its tests fail on the base and pass with its fix) is test_check.py's.
"""

from __future__ import annotations

import functools

from bench.quality.cli import run_tasks
from bench.quality.scripted import scripted_factory
from bench.quality.taskset import Task
from bot.config import RepoConfig


async def test_the_oracle_resolves_every_task(
    bench_image: str, one_task_per_language: list[Task]
) -> None:
    tasks = one_task_per_language
    results = await run_tasks(
        tasks,
        factory=functools.partial(scripted_factory, "oracle"),
        config=RepoConfig(),
        image=bench_image,
        parallel=2,
    )
    unresolved = {
        r.id: r.error or r.fail_to_pass_failed + r.pass_to_pass_failed
        for r in results
        if not r.resolved
    }
    assert unresolved == {}
    assert [r.id for r in results] == [task.id for task in tasks]
    # The fix went through the agent's shell tool, was committed and pushed.
    assert {(r.conclusion, r.turns) for r in results} == {("changed", 2)}
