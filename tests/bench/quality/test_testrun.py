"""Which command runs a task's hidden tests: pytest only the files its graded tests live in."""

from __future__ import annotations

from pathlib import Path

from bench.quality.taskset import TASKS_DIR, Task, load_task
from bench.quality.testrun import TEST_COMMANDS, runner_command

PYTEST = TEST_COMMANDS["pytest"]


def _with(task: Task, fail_to_pass: tuple[str, ...], pass_to_pass: tuple[str, ...]) -> Task:
    update = {"fail_to_pass": fail_to_pass, "pass_to_pass": pass_to_pass}
    spec = task.spec.model_construct(**{**dict(task.spec), **update})
    return Task(spec, task.folder, task.title, task.body)


def test_pytest_runs_the_files_of_the_graded_tests_only(tmp_path: Path) -> None:
    task = _with(
        load_task(TASKS_DIR / "py-dotenv-quotes"),
        ("tests/b_test.py::test_one[a b]", "tests/a's.py::T::test_two"),
        ("tests/b_test.py::test_three",),
    )
    assert runner_command(task, tmp_path) == f"{PYTEST} -- 'tests/a'\"'\"'s.py' tests/b_test.py"


def test_a_task_being_authored_runs_the_test_modules_its_hidden_tests_leave(
    tmp_path: Path,
) -> None:
    # Its hidden tests touch tests/test_parser.py; none of its tests is listed yet.
    task = _with(load_task(TASKS_DIR / "py-dotenv-quotes"), (), ())
    assert runner_command(task, tmp_path) == PYTEST  # not in the tree: the whole suite
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_parser.py").write_text("")
    assert runner_command(task, tmp_path) == f"{PYTEST} -- tests/test_parser.py"


def test_go_and_node_run_as_they_are(tmp_path: Path) -> None:
    for ident, runner in (("go-lru-get-refreshes", "go"), ("js-range-float-steps", "node")):
        assert runner_command(load_task(TASKS_DIR / ident), tmp_path) == TEST_COMMANDS[runner]
