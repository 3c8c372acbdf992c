"""Which command runs a task's hidden tests: pytest only the files its graded tests live in."""

from __future__ import annotations

from bench.quality.taskset import TASKS_DIR, load_task
from bench.quality.testrun import TEST_COMMANDS, runner_command


def test_pytest_runs_the_files_of_the_graded_tests_only() -> None:
    task = load_task(TASKS_DIR / "py-dotenv-quotes")
    spec = task.spec.model_copy(
        update={
            "fail_to_pass": ("tests/b_test.py::test_one[a b]", "tests/a's.py::T::test_two"),
            "pass_to_pass": ("tests/b_test.py::test_three",),
        }
    )
    command = runner_command(type(task)(spec, task.folder, task.title, task.body))
    assert command == f"{TEST_COMMANDS['pytest']} -- 'tests/a'\"'\"'s.py' tests/b_test.py"


def test_without_a_listed_test_the_whole_suite_runs() -> None:
    task = load_task(TASKS_DIR / "py-dotenv-quotes")
    # A task being authored: its tests are found by running them all.
    spec = task.spec.model_construct(**{**dict(task.spec), "fail_to_pass": (), "pass_to_pass": ()})
    assert (
        runner_command(type(task)(spec, task.folder, task.title, task.body))
        == (TEST_COMMANDS["pytest"])
    )


def test_go_and_node_run_as_they_are() -> None:
    for ident, runner in (("go-lru-get-refreshes", "go"), ("js-range-float-steps", "node")):
        assert runner_command(load_task(TASKS_DIR / ident)) == TEST_COMMANDS[runner]
