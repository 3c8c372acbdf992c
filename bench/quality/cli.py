"""`python -m bench.quality`: list, check, or run the task set; or build tasks from history.

    python -m bench.quality --list
    python -m bench.quality --check [--tasks ID,ID]
    python -m bench.quality --provider anthropic --model claude-sonnet-5-5 [--tasks ID,ID]
    python -m bench.quality --provider oracle        # the scripted models: no key
    python -m bench.quality --from-history OWNER/REPO --out DIR    # GITHUB_TOKEN

Exit status: 0 done (a run's tasks graded, whatever they scored; a check
with every task sound), 1 a check found a task unsound, 2 bad input (an
unknown task, a malformed task folder, a missing key, no Docker), one line.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.quality import report
from bench.quality.check import check_tasks
from bench.quality.gitops import BenchGitError
from bench.quality.harness import Remote, TaskResult, run_task
from bench.quality.history import from_history_command
from bench.quality.scripted import SCRIPTED, scripted_factory
from bench.quality.taskset import TASKS_DIR, Task, TaskError, load_tasks, select
from bot.config import RepoConfig
from runner.errors import ConfigError
from runner.llm.provider import Provider, close_provider
from runner.llm.registry import PROVIDERS, make_provider
from runner.sandbox.factory import DEFAULT_IMAGE
from runner.text import one_line

__all__ = ["main"]

_PROG = "python -m bench.quality"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise TaskError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_PROG, description="Neo's quality benchmark: resolve rate on real tasks.")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="print the tasks")
    what.add_argument("--check", action="store_true", help="check every task is sound (no model)")
    what.add_argument(
        "--from-history", metavar="OWNER/REPO", help="build tasks from its merged pull requests"
    )
    parser.add_argument(
        "--provider", help=f"the model's provider ({', '.join(PROVIDERS + SCRIPTED)})"
    )
    parser.add_argument("--model", help="the model (default: the provider's)")
    parser.add_argument("--tasks", help="comma-separated task ids (default: all)")
    parser.add_argument("--tasks-dir", type=Path, default=TASKS_DIR, help="the task set's folder")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--image",
        default=os.environ.get("NEO_SANDBOX_IMAGE") or DEFAULT_IMAGE,
        help="sandbox image (default: $NEO_SANDBOX_IMAGE or %(default)s)",
    )
    parser.add_argument("--parallel", type=int, default=None, help="tasks at once")
    parser.add_argument("--max-turns", type=int, help="turns per task (default: a job's)")
    parser.add_argument("--max-cost", type=float, help="US dollars per task (default: none)")
    parser.add_argument("--out", type=Path, help="--from-history: where to write the tasks")
    parser.add_argument("--limit", type=int, default=20, help="--from-history: PRs to read")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return asyncio.run(_main(args))
    except (TaskError, ConfigError, BenchGitError) as error:
        print(f"{_PROG}: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace) -> int:
    if args.from_history:
        return await from_history_command(args)
    tasks = load_tasks(args.tasks_dir)
    if args.tasks:
        tasks = select(tasks, [ident.strip() for ident in args.tasks.split(",") if ident.strip()])
    if args.parallel is not None and args.parallel < 1:
        raise TaskError("--parallel must be at least 1")
    if args.list:
        _print(args, report.list_json(tasks), report.list_table(tasks))
        return 0
    if args.check:
        started = time.monotonic()
        checked = await check_tasks(tasks, image=args.image, parallel=args.parallel or 2)
        seconds = time.monotonic() - started
        _print(args, report.check_json(checked, seconds), report.check_table(checked, seconds))
        return 0 if all(item.sound for item in checked) else 1
    if not args.provider:
        raise TaskError("--provider is required to run the tasks (or --list, --check)")
    factory = await _factory(args.provider, args.model)
    config = _config(args)
    results = await run_tasks(
        tasks,
        factory=factory,
        config=config,
        image=args.image,
        parallel=args.parallel or 1,
    )
    _print(args, report.run_json(results), report.run_table(results))
    return 0


FactoryFor = Callable[[Task], Callable[..., Provider]]


async def _factory(provider: str, model: str | None) -> FactoryFor:
    """The provider factory for each task; a missing key fails here, before any task."""
    if provider in SCRIPTED:
        return functools.partial(scripted_factory, provider)
    if provider not in PROVIDERS:
        raise TaskError(
            f"unknown provider {provider!r} (one of: {', '.join(PROVIDERS + SCRIPTED)})"
        )
    await close_provider(make_provider(provider, model))  # ConfigError names the key
    return lambda task: make_provider


def _config(args: argparse.Namespace) -> RepoConfig:
    """A job's defaults (`.github/neo.yml` left empty), with the flags' overrides."""
    update: dict[str, object] = {}
    if args.provider in PROVIDERS:
        update["provider"] = args.provider
        update["model"] = args.model
    if args.max_turns is not None:
        update["max_turns"] = args.max_turns
    if args.max_cost is not None:
        update["max_cost_usd"] = args.max_cost
    try:
        return RepoConfig.model_validate({**RepoConfig().model_dump(), **update})
    except ValueError as error:
        raise TaskError(one_line(error)) from None


async def run_tasks(
    tasks: Sequence[Task],
    *,
    factory: FactoryFor,
    config: RepoConfig,
    image: str,
    parallel: int = 1,
    workdir: Path | None = None,
) -> list[TaskResult]:
    """Each task run as a job and graded, `parallel` at a time; results in the tasks' order."""
    gate = asyncio.Semaphore(parallel)
    with tempfile.TemporaryDirectory(prefix="neo-bench-") as scratch:
        root = workdir or Path(scratch)
        remote = Remote(root / "remote")
        with remote.serving():

            async def one(number: int, task: Task) -> TaskResult:
                async with gate:
                    return await run_task(
                        task,
                        number,
                        remote=remote,
                        config=config,
                        image=image,
                        workdir=root,
                        provider_factory=factory(task),
                    )

            return list(
                await asyncio.gather(*(one(n, task) for n, task in enumerate(tasks, start=1)))
            )


def _print(args: argparse.Namespace, data: object, table: str) -> None:
    if args.format == "json":
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(table)
