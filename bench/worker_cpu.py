"""A worker's CPU per job: what one `neo worker` process spends on a small task job.

Starts `neo worker --concurrency 1` as a subprocess with the local sandbox and
the embedded SQLite queue, against the fakes of tests/fakes on loopback: the
fake GitHub (REST), a git smart-HTTP server holding small repositories, and
the fake Messages API. Jobs go in one at a time, as in tests/bot/test_multihost.py:
on each thread a first job whose model edits a file (one command, then a
summary), so it commits, pushes and opens the draft pull request, then a
follow-up whose model only answers, continuing the thread's session.

For each job, from its enqueue until the queue says it ended, the worker
process's CPU is read from /proc/<pid>/stat: its own (user + sys of every
thread) and that of the children it waited for (git, the sandbox's helpers).
One warm-up job goes first (it loads the SDKs and fills the mirror cache), and
the worker's idle CPU is measured over `--idle` seconds with nothing queued: a
polling loop that spins shows there.

Prints p50 and p90 (nearest rank) of own, children and total CPU per job, and
the idle CPU per second.

    uv run python -m bench.worker_cpu [--jobs 40] [--idle 5]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.jobs import FINAL_STATES, JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.queue import SqliteQueue
from tests.bot.serving import AppGitServer, neo_worker, serve_env
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    Reply,
    ScriptedReply,
    Usage,
    make_repo,
    text,
    tool_use,
)

_INSTALLATION = 1000
_USAGE = Usage(input_tokens=100, output_tokens=10)
_TICKS = os.sysconf("SC_CLK_TCK")
_EDIT = "please append a line to notes.md"
_FOLLOW_UP = "and what else is left to do?"


@dataclass(frozen=True, slots=True)
class Cpu:
    own: float
    children: float

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.own - other.own, self.children - other.children)


def cpu_of(pid: int) -> Cpu:
    """The process's CPU seconds so far: its own, and its waited-for children's."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return Cpu((utime + stime) / _TICKS, (cutime + cstime) / _TICKS)


class Model:
    """An edit then a summary for a thread's first job; an answer for its follow-up.

    The newest prompt quotes the comment that asked last: its words say which."""

    def __call__(self, body: Mapping[str, Any]) -> ScriptedReply:
        last = body["messages"][-1]["content"]
        if not isinstance(last, str) and any(b.get("type") == "tool_result" for b in last):
            return Reply([text("Appended a line to notes.md.")], usage=_USAGE)
        asked = str(last)
        if asked.rfind(_FOLLOW_UP) > asked.rfind(_EDIT):
            return Reply([text("Nothing to change.")], usage=_USAGE)
        edit = {"command": "echo done >> notes.md"}
        return Reply([tool_use("toolu_1", "bash", edit)], "tool_use", usage=_USAGE)


def _threads(github: FakeGitHub, served: Path, count: int) -> None:
    """`count` repositories with one issue each, installed apart (no write spacing)."""
    for t in range(count):
        owner = f"org{t}"
        github.install(_INSTALLATION + t, owner, ["hello"])
        github.set_permission(f"{owner}/hello", "mona", "write")
        make_repo(served / owner / "hello.git", files=1, file_size=64)
        github.add_issue(f"{owner}/hello", f"Thread {t}", "Some work.", user="mona")


def _request(github: FakeGitHub, n: int) -> JobRequest:
    """The `n`th job: thread n // 2, an edit first, then a follow-up; its comment posted."""
    thread, follow_up = divmod(n, 2)
    repository = f"org{thread}/hello"
    instruction = f"@neo {_FOLLOW_UP if follow_up else _EDIT}"
    comment = github.add_comment(repository, 1, instruction, user="mona")
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=repository, number=1),
        installation_id=_INSTALLATION + thread,
        event="issue_comment.created",
        trigger=TriggerKind("issue_comment.created"),
        trigger_id=comment,
        author="mona",
        author_association="COLLABORATOR",
        instruction=instruction,
        dedupe_key=f"comment:{comment}",
        delivery_id=f"delivery-{comment}",
    )


async def _run_one(queue: SqliteQueue, request: JobRequest, pid: int) -> Cpu:
    before = cpu_of(pid)
    queued = await queue.enqueue(request.delivery_id, [request])
    (job_id,) = queued.job_ids
    deadline = time.monotonic() + 120
    while True:
        job = await queue.get(job_id)
        if job is not None and job.state in FINAL_STATES:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} did not end within 120 s")
        await asyncio.sleep(0.02)
    if job.state is not JobState.SUCCEEDED:
        raise SystemExit(f"job {job_id} ended {job.state.value}: {job.result}")
    return cpu_of(pid) - before


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def _measure(args: argparse.Namespace, scratch: Path) -> None:
    with FakeGitHub() as github, FakeAnthropicAPI() as anthropic:
        served = scratch / "served"
        served.mkdir()
        jobs = args.jobs + 2
        _threads(github, served, math.ceil(jobs / 2))
        anthropic.script(*[Model()] * (jobs * 3))
        with AppGitServer(served, github) as git_server:
            data = scratch / "data"
            env = {
                **serve_env(github, data),
                **anthropic.env,
                "NEO_GITHUB_GIT_URL": git_server.base_url,
            }
            log = scratch / "worker.log"
            with neo_worker(env, log, "--concurrency", "1") as worker:
                async with SqliteQueue(data / "neo.db") as queue:
                    # Warm-up: a thread's two jobs, SDKs loaded, mirror cache filled.
                    for n in range(2):
                        await _run_one(queue, _request(github, n), worker.pid)
                    idle_start, t0 = cpu_of(worker.pid), time.monotonic()
                    await asyncio.sleep(args.idle)
                    idle = (cpu_of(worker.pid) - idle_start).own / (time.monotonic() - t0)
                    per_job = [
                        await _run_one(queue, _request(github, n), worker.pid)
                        for n in range(2, jobs)
                    ]
    own = [c.own for c in per_job]
    children = [c.children for c in per_job]
    total = [c.own + c.children for c in per_job]
    print(f"jobs measured: {len(per_job)} (after 2 warm-up jobs); load: {os.getloadavg()}")
    for name, values in (("own", own), ("children", children), ("total", total)):
        print(
            f"CPU per job, {name:8}: p50 {1000 * _pct(values, 0.5):6.0f} ms"
            f"  p90 {1000 * _pct(values, 0.9):6.0f} ms"
            f"  mean {1000 * statistics.fmean(values):6.0f} ms"
        )
    print(f"idle CPU: {1000 * idle:.0f} ms per second over {args.idle:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40, help="measured jobs, after 2 warm-up")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="neo-bench-worker-cpu-") as scratch:
        asyncio.run(_measure(args, Path(scratch)))


if __name__ == "__main__":
    main()
