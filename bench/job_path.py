"""The job path's shape: one task job followed from claim to report, and the code's size.

Runs one `@neo` task job through the real worker in this process: the real
SqliteQueue, githubkit against the fake GitHub, the git CLI against the fake
git server, the anthropic SDK against the fake Messages API (a scripted edit,
a command, a summary), and the local sandbox. The mention becomes a draft
pull request and the progress comment turns into the report.

While the job runs, `sys.setprofile` (and `threading.setprofile`) see every
Python call. The job's calls are those of its asyncio task and of the tasks
and threads it starts (its heartbeat and deadline left out), from the claim
to the queue's `finish`. Of those it keeps each cross-module call edge, the
caller a function in `bot/` or in `runner/`'s top-level modules (the job path;
`runner`'s subpackages, the agent loop, providers, tools and sandboxes, are
entered but not followed), the callee a function of another module of `bot/`
or `runner/`, the first time that edge is seen. A coroutine that runs as a
task of its own is called from where it was created. The walk is each edge
in that order, caller's module then callee's, with a module repeated back to
back taken once. It prints:

- modules passed through: the distinct modules of the walk;
- returns: the times the walk comes back to a module it had already left;
- with `--walk`, the walk itself.

And, over the non-test modules of `bot/` and `runner/`: modules over 800
lines, functions over 60 lines (`def` to its last line), and signatures with
8 or more parameters (`self`/`cls` not counted; `*args`/`**kwargs` count).
`--static` prints those alone, without running a job; `--list` names them.

    uv run python -m bench.job_path [--walk] [--list] [--static] [--runs 1]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import contextvars
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from bot.jobs import JobKind, TriggerKind

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "runner")
REPO = "octo/hello"
INSTALLATION = 7
JOB_TIMEOUT = 120.0


# --- the code's size ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Size:
    big_modules: list[tuple[str, int]]
    long_functions: list[tuple[str, str, int]]
    wide_signatures: list[tuple[str, str, int]]


def measure_size(root: Path = ROOT) -> Size:
    big: list[tuple[str, int]] = []
    long: list[tuple[str, str, int]] = []
    wide: list[tuple[str, str, int]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = str(path.relative_to(root))
            source = path.read_text()
            lines = len(source.splitlines())
            if lines > 800:
                big.append((name, lines))
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long.append((name, node.name, length))
                args = node.args
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                every += [arg for arg in (args.vararg, args.kwarg) if arg is not None]
                count = sum(1 for arg in every if arg.arg not in ("self", "cls"))
                if count >= 8:
                    wide.append((name, node.name, count))
    return Size(big, long, wide)


# --- the job's calls ------------------------------------------------------------------


def _module_of(filename: str) -> str | None:
    """`bot/worker/job.py` for a file of bot/ or runner/ under ROOT, else None."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] not in PACKAGES or relative.suffix != ".py":
        return None
    return str(relative)


def _followed(module: str) -> bool:
    """A module whose calls the walk follows: bot/, and runner's top-level modules."""
    parts = module.split("/")
    return parts[0] == "bot" or (parts[0] == "runner" and len(parts) == 2)


# The job path proper: the worker's modules and the runner's top level. The
# GitHub adapter, the queue and the config model are entered, not followed.
def _on_path(module: str) -> bool:
    parts = module.split("/")
    return (
        parts[:2] == ["bot", "worker"]
        or module == "bot/jobs.py"
        or (parts[0] == "runner" and len(parts) == 2)
    )


_IN_JOB: contextvars.ContextVar[bool] = contextvars.ContextVar("in_job", default=False)
_LEFT_OUT = ("Worker._heartbeat", "Worker._deadline")


class CallTracer:
    """The job's cross-module call edges, each the first time it is seen."""

    def __init__(self) -> None:
        self.edges: list[tuple[str, str, str, str]] = []  # caller module, function, callee ...
        self._seen: set[tuple[str, str, str, str]] = set()
        self._modules: dict[str, str | None] = {}
        self._main = threading.get_ident()
        self.on = False

    def _module(self, filename: str) -> str | None:
        found = self._modules.get(filename, "")
        if found == "":
            found = self._modules[filename] = _module_of(filename)
        return found

    def _in_job(self) -> bool:
        if threading.get_ident() != self._main:
            return _IN_JOB.get()
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return False
        if task is None:
            return False
        if getattr(task.get_coro(), "__qualname__", "") in _LEFT_OUT:
            return False
        if not _IN_JOB.get() and task.get_name().startswith("neo-job-"):
            _IN_JOB.set(True)  # the job's task: the tasks it starts inherit it
        return _IN_JOB.get()

    def _caller(self, frame: FrameType) -> tuple[str, str] | None:
        """The nearest first-party frame below `frame`, or where its task's coroutine was made."""
        back = frame.f_back
        while back is not None:
            module = self._module(back.f_code.co_filename)
            if module is not None:
                return module, back.f_code.co_qualname
            back = back.f_back
        if threading.get_ident() != self._main:
            return None
        task = asyncio.current_task()
        coro = task.get_coro() if task is not None else None
        if coro is None or getattr(coro, "cr_frame", None) is not frame:
            return None
        for filename, _, function in getattr(coro, "cr_origin", None) or ():
            module = self._module(filename)
            if module is not None:
                return module, function
        return None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        callee = self._module(frame.f_code.co_filename)
        if callee is None or not self._in_job():
            return
        caller = self._caller(frame)
        if caller is None or caller[0] == callee or not _followed(caller[0]):
            return
        edge = (caller[0], caller[1], callee, frame.f_code.co_qualname)
        if edge not in self._seen:
            self._seen.add(edge)
            self.edges.append(edge)

    @contextlib.contextmanager
    def tracing(self) -> Iterator[None]:
        sys.set_coroutine_origin_tracking_depth(32)
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
            sys.set_coroutine_origin_tracking_depth(0)


def walk(edges: list[tuple[str, str, str, str]]) -> list[str]:
    """The modules the edges pass through, in order, a module repeated back to back once."""
    path: list[str] = []
    for caller, _, callee, _ in edges:
        for module in (caller, callee):
            if not path or path[-1] != module:
                path.append(module)
    return path


def returns(path: list[str]) -> int:
    return sum(1 for i, module in enumerate(path) if module in path[:i])


# --- one task job through the worker --------------------------------------------------


@contextlib.asynccontextmanager
async def _rig(scratch: Path) -> AsyncIterator[Any]:
    from bot.config.settings import load_settings
    from bot.github.app import GitHubApp
    from bot.queue import SqliteQueue
    from tests.fakes import FakeAnthropicAPI, FakeGitHub, FakeGitServer, make_repo

    class Git(FakeGitServer):
        def __init__(self, root: Path, github: FakeGitHub) -> None:
            self._github = github
            super().__init__(root)

        @property
        def token(self) -> str:
            tokens = self._github.tokens
            return tokens[-1].token if tokens else "no-token-yet"

        @token.setter
        def token(self, value: str) -> None:
            pass

    with contextlib.ExitStack() as stack:
        github = stack.enter_context(FakeGitHub())
        github.install(INSTALLATION, "octo", ["hello"])
        github.set_permission(REPO, "mona", "write")
        make_repo(scratch / "served" / f"{REPO}.git", files=3)
        git = stack.enter_context(Git(scratch / "served", github))
        anthropic = stack.enter_context(FakeAnthropicAPI())
        os.environ.update(anthropic.env)
        settings = load_settings(
            {
                "NEO_GITHUB_APP_ID": str(github.app_id),
                "NEO_GITHUB_PRIVATE_KEY": github.private_key_pem,
                "NEO_WEBHOOK_SECRET": "secret",
                "NEO_GITHUB_API_URL": github.base_url,
                "NEO_GITHUB_GIT_URL": git.base_url,
                "NEO_DATA_DIR": str(scratch / "data"),
                "NEO_SANDBOX": "local",
                "NEO_ALLOW_LOCAL_SANDBOX": "1",
            }
        )
        async with (
            SqliteQueue(scratch / "queue.db") as queue,
            GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app,
        ):
            yield github, anthropic, queue, app, settings


async def _one_job(scratch: Path, tracer: CallTracer | None) -> float:
    """One mention to its draft pull request and report; seconds from claim to finish."""
    from bot.github.client import Spacers
    from bot.jobs import FINAL_STATES, JobRequest, JobState, Thread
    from bot.worker.loop import Worker, WorkerDeps, WorkerOptions
    from tests.fakes import Reply, text, tool_use

    async with _rig(scratch) as (github, anthropic, queue, app, settings):
        number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
        comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
        anthropic.script(
            Reply(
                [
                    tool_use(
                        "t1",
                        "edit_file",
                        {"path": "README.md", "old_string": "# fixture\n", "new_string": "# hi\n"},
                    )
                ],
                "tool_use",
            ),
            Reply([tool_use("t2", "bash", {"command": "grep -c hi README.md"})], "tool_use"),
            Reply([text("Said hello in README.md.")]),
        )
        request = JobRequest(
            kind=JobKind.TASK,
            thread=Thread(REPO, number),
            installation_id=INSTALLATION,
            event="issue_comment.created",
            trigger=TriggerKind("issue_comment.created"),
            trigger_id=comment,
            author="mona",
            author_association="COLLABORATOR",
            instruction="@neo add a line to the README",
            dedupe_key=f"comment:{comment}",
            delivery_id="d1",
        )
        job_id = (await queue.enqueue("d1", [request])).job_ids[0]
        worker = Worker(
            WorkerDeps(queue=queue, app=app, settings=settings, spacers=Spacers(0.0)),
            WorkerOptions(name="bench", poll_every=0.02, edit_every=0.2),
        )
        stop = asyncio.Event()
        started = time.monotonic()
        with tracer.tracing() if tracer else contextlib.nullcontext():
            if tracer:
                tracer.on = True
            task = asyncio.create_task(worker.run(stop))
            deadline = time.monotonic() + JOB_TIMEOUT
            while True:
                job = await queue.get(job_id)
                assert job is not None
                if job.state in FINAL_STATES:
                    break
                if time.monotonic() > deadline or task.done():
                    raise SystemExit(f"bench: job {job_id} did not finish ({job.state})")
                await asyncio.sleep(0.01)
            if tracer:
                tracer.on = False
        took = time.monotonic() - started
        stop.set()
        await asyncio.wait_for(task, 30)
        if job.state is not JobState.SUCCEEDED or not github.pulls(REPO):
            raise SystemExit(f"bench: job {job_id} ended {job.state}: {job.result}")
        return took


# --- the report -----------------------------------------------------------------------


def _print_size(size: Size, listed: bool) -> None:
    print(f"modules over 800 lines:            {len(size.big_modules)}")
    if listed:
        for name, lines in sorted(size.big_modules, key=lambda m: -m[1]):
            print(f"    {lines:5}  {name}")
    print(f"functions over 60 lines:           {len(size.long_functions)}")
    if listed:
        for name, function, lines in sorted(size.long_functions, key=lambda f: -f[2]):
            print(f"    {lines:5}  {name}:{function}")
    print(f"signatures with 8+ parameters:     {len(size.wide_signatures)}")
    if listed:
        for name, function, count in sorted(size.wide_signatures, key=lambda f: -f[2]):
            print(f"    {count:5}  {name}:{function}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--walk", action="store_true", help="print the walk of modules")
    parser.add_argument("--list", action="store_true", help="name the big modules and functions")
    parser.add_argument("--static", action="store_true", help="the code's size only, no job")
    parser.add_argument("--runs", type=int, default=1, help="untraced runs timed after the traced")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    _print_size(measure_size(), args.list)
    if args.static:
        return
    tracer = CallTracer()
    with tempfile.TemporaryDirectory(prefix="neo-bench-path-") as temp:
        asyncio.run(_one_job(Path(temp), tracer))
    path = walk(tracer.edges)
    print(
        f"task job, claim to report, every caller in bot/ and runner's top level:"
        f" modules passed through {len(set(path))}, returns to a module already left"
        f" {returns(path)} ({len(tracer.edges)} distinct cross-module calls)"
    )
    proper = [edge for edge in tracer.edges if _on_path(edge[0])]
    short = walk(proper)
    print(
        f"task job, claim to report, callers on the job path (bot/worker, bot/jobs.py,"
        f" runner's top level): modules passed through {len(set(short))},"
        f" returns to a module already left {returns(short)}"
        f" ({len(proper)} distinct cross-module calls)"
    )
    if args.walk:
        for caller, function, callee, target in tracer.edges:
            print(f"    {caller}:{function} -> {callee}:{target}")
        print("  walk (job path): " + " > ".join(short))
    times = []
    for n in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="neo-bench-path-") as temp:
            times.append(asyncio.run(_one_job(Path(temp) / str(n), None)))
    if times:
        print(
            f"claim -> finished, untraced, local sandbox: median {statistics.median(times):.3f} s"
            f" over {len(times)} runs"
        )


if __name__ == "__main__":
    main()
