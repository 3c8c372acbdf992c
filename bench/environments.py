"""Job start -> first model call, cold (setup runs) and warm (a prepared environment is reused).

A Python project with N dependencies (default 20) from a package index the
bench starts on a Docker network of its own, served by a local git server.
The dependencies are tiny wheels built here (the floor of an install), or,
with `--wheels DIR`, every wheel in DIR: a real project's, downloaded once,
e.g. these 21 (6 MB, what `requests`, `pydantic`, `rich`, `jinja2`, ... pull
in) for the sandbox's Python 3.11:

    uv run --no-project --with pip python -m pip download --only-binary=:all: \\
        --python-version 3.11 --implementation cp --abi cp311 \\
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d DIR \\
        requests==2.32.3 pydantic==2.9.2 click==8.1.7 jinja2==3.1.4 rich==13.9.2 \\
        python-dateutil==2.9.0.post0 pyyaml==6.0.2 attrs==24.2.0 packaging==24.1

Nothing is fetched from PyPI while the bench runs. Each job runs in this process
through `runner.job.run`: clone on the host, the docker sandbox with its
egress proxy, setup detected from requirements.txt, and the fake Messages
API, whose first request ends the span measured (it answers with a final
message, so the job ends soon after).

- cold: the repository's prepared environment is removed before the job, so
  setup runs: the setup container, the virtual environment's install from the
  index, the commit, then the agent's container;
- warm: the job starts from the environment the job before it kept;
- none: the same job with `setup: []` and the network a warm job gets (the
  python ecosystem, read-only), so its egress proxy starts too: the floor a
  warm job's start stands on (clone, proxy and container), without setup.

Runs alternate cold, warm and none. Prints, for each, median and p90 (nearest
rank) of job start -> first model call, cut at the job's own marks (clone
done, sandbox ready: runner.job's `neo.job` log lines), the setup phase's own
time (cold), and the ratio of the medians.

    uv run python -m bench.environments [--runs 5] [--deps 20 | --wheels DIR]
        [--image neo-sandbox:local]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.job import JOB_SETTINGS, JobSpec, run
from runner.network.policy import default_policy
from runner.sandbox.docker import docker_client
from runner.sandbox.factory import EGRESS_NETWORKS_VARIABLE
from runner.sandbox.prepared import prune
from runner.sandbox.preparing import orphaned
from runner.sandbox.requests import Bounds
from runner.sandbox.setup_plan import SetupOutcome
from tests.fakes import FakeAnthropicAPI, FakeGitServer, Reply, add_commit, make_repo, text
from tests.package_index import Package, package_index, wheel_project

TOKEN = "ghs_BenchEnvironmentsToken000000000000000ab"


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(math.ceil(0.9 * len(ordered)) - 1, 0)]


def _line(name: str, samples: list[float]) -> str:
    return (
        f"  {name:<38} median {statistics.median(samples):7.2f} s"
        f"   p90 {_p90(samples):7.2f} s   (n={len(samples)})"
    )


class _Marks(logging.Handler):
    """The unix times of runner.job's marks (`checkout_done`, `sandbox_ready`), by event."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = json.loads(record.getMessage())
        except ValueError:
            return
        if isinstance(line, dict) and "event" in line and "ts" in line:
            self.seen[str(line["event"])] = float(line["ts"])


# Job start -> each mark, in order; the last span ends at the first model request.
_SPANS = (("clone", "checkout_done"), ("sandbox (setup, proxy, container)", "sandbox_ready"))


async def _job(
    spec: JobSpec, fake: FakeAnthropicAPI, marks: _Marks
) -> tuple[float, dict[str, float], SetupOutcome]:
    """Run `spec`; seconds from the call until the first model request, the spans
    between the job's marks, and its setup."""
    seen: dict[str, float] = {}

    def first(body: Mapping[str, Any]) -> Reply:
        seen["first"] = time.time()
        return Reply([text("Nothing to change.")])

    fake.script(first)
    marks.seen.clear()
    started = time.time()
    result = await run(spec)
    if "first" not in seen:
        raise SystemExit(f"bench: job {spec.job_id} never asked the model: {result}")
    if result.setup is None or (result.setup.mode != "off" and not result.setup.ok):
        raise SystemExit(f"bench: job {spec.job_id}'s setup failed: {result.setup}")
    spans: dict[str, float] = {}
    last = started
    for name, event in _SPANS:
        at = marks.seen.get(event, last)
        spans[name] = at - last
        last = at
    spans["to the first model request"] = seen["first"] - last
    return seen["first"] - started, spans, result.setup


async def bench(args: argparse.Namespace) -> None:
    client = docker_client()
    marks = _Marks()
    job_log = logging.getLogger("neo.job")
    job_log.addHandler(marks)
    job_log.setLevel(logging.INFO)
    job_log.propagate = False
    wheels = sorted(args.wheels.glob("*.whl")) if args.wheels else []
    if args.wheels and not wheels:
        raise SystemExit(f"bench: no wheel in {args.wheels}")
    packages = [] if wheels else [Package(f"bench-dep-{n:02d}") for n in range(args.deps)]
    pins = [f"{p.name}=={p.version}" for p in packages]
    pins += ["==".join(wheel_project(path.name)) for path in wheels]
    with (
        tempfile.TemporaryDirectory(prefix="neo-bench-env-") as scratch,
        package_index(client, packages, image=args.image, wheels=wheels) as index,
        FakeAnthropicAPI() as fake,
    ):
        root = Path(scratch)
        origin = root / "served" / "octo" / "bench.git"
        make_repo(origin, files=20)
        lines = [f"--index-url {index.url}", *pins]
        add_commit(origin, {"requirements.txt": ("\n".join(lines) + "\n").encode()})
        os.environ.update(fake.env)
        os.environ[EGRESS_NETWORKS_VARIABLE] = index.network
        with FakeGitServer(root / "served", token=TOKEN) as server:
            url = server.url("octo/bench.git")
            settings = replace(JOB_SETTINGS, model="claude-test", effort=None, time_limit=900.0)

            def spec(job_id: str, **changes: Any) -> JobSpec:
                return JobSpec(
                    job_id=job_id,
                    repo_url=url,
                    token=TOKEN,
                    base_branch="main",
                    work_branch=f"neo/{job_id}",
                    prompt="Check the tests.",
                    data_dir=root / "data",
                    settings=settings,
                    sandbox="docker",
                    image=args.image,
                    **changes,
                )

            cold: list[float] = []
            warm: list[float] = []
            setup: list[float] = []
            cold_spans: dict[str, list[float]] = {}
            warm_spans: dict[str, list[float]] = {}
            none: list[float] = []
            none_spans: dict[str, list[float]] = {}
            try:
                # One warm-up pair: the mirror cache and the engine's caches.
                for number in range(args.runs + 1):
                    await asyncio.to_thread(
                        prune, client, Bounds(), everything=True, orphan=orphaned, repository=url
                    )
                    took, spans, done = await _job(spec(f"cold-{number}"), fake, marks)
                    if done.reused_from is not None:
                        raise SystemExit("bench: a cold job reused an environment")
                    if number:
                        cold.append(took)
                        setup.append(done.seconds)
                        for name, seconds in spans.items():
                            cold_spans.setdefault(name, []).append(seconds)
                    took, spans, done = await _job(spec(f"warm-{number}"), fake, marks)
                    if done.reused_from is None:
                        raise SystemExit("bench: a warm job set up again")
                    if number:
                        warm.append(took)
                        for name, seconds in spans.items():
                            warm_spans.setdefault(name, []).append(seconds)
                    without = spec(f"none-{number}", setup=(), network=default_policy(["python"]))
                    took, spans, done = await _job(without, fake, marks)
                    if done.mode != "off":
                        raise SystemExit("bench: a job with setup: [] set up")
                    if number:
                        none.append(took)
                        for name, seconds in spans.items():
                            none_spans.setdefault(name, []).append(seconds)
            finally:
                prune(client, Bounds(), everything=True, orphan=orphaned, repository=url)
    what = f"{len(wheels)} real wheels" if wheels else f"{args.deps} tiny wheels"
    print(f"job start -> first model call, {what} from a local index:")
    print(_line("cold (setup runs)", cold))
    for name, samples in cold_spans.items():
        print(_line(f"  {name}", samples))
    print(_line("  of which the setup commands", setup))
    print(_line("warm (prepared environment reused)", warm))
    for name, samples in warm_spans.items():
        print(_line(f"  {name}", samples))
    print(_line("none (setup: [], the same network)", none))
    for name, samples in none_spans.items():
        print(_line(f"  {name}", samples))
    ratio = statistics.median(cold) / statistics.median(warm)
    over = statistics.median(warm) - statistics.median(none)
    print(f"  cold / warm (medians): {ratio:.1f}x; warm - none (medians): {over:+.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--deps", type=int, default=20)
    parser.add_argument("--wheels", type=Path, help="serve these wheels instead of tiny ones")
    parser.add_argument("--image", default="neo-sandbox:local")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
