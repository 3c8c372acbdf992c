"""Neo's quality benchmark: real tasks, hidden tests, SWE-bench's grading rule."""

from bench.quality.check import Checked, check_task, check_tasks
from bench.quality.harness import TaskResult, run_task
from bench.quality.taskset import Task, TaskError, load_task, load_tasks, select

__all__ = [
    "Checked",
    "Task",
    "TaskError",
    "TaskResult",
    "check_task",
    "check_tasks",
    "load_task",
    "load_tasks",
    "run_task",
    "select",
]
