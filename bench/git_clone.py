"""Clone of a 5,000-file repository: cold versus warm mirror cache.

A bare repository of 5,000 files (1 KB each, 100 to a directory, 3 commits)
is served by the fake smart-HTTP server of tests/fakes on 127.0.0.1, behind
token auth. Each run times `runner.git.clone` twice into fresh directories:

- cold: the mirror cache is empty, so the blob-less mirror is cloned and the
  checked-out commit's blobs are fetched, then every file is written;
- warm: the mirror exists and the server has one new commit since, so only
  that commit and its changed blob travel.

Between the two, the cache makes its spare tree in the background, as it does
while a job runs; the time that takes is printed, and is not part of either
clone. The same runs are repeated with spare trees off, which shows what the
mirror alone saves. Prints medians, the warm/cold ratio (target: <= 0.30) and
the bytes the server sent.

    uv run python -m bench.git_clone [--files 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from runner.git import MirrorCache, clone
from tests.fakes.git_server import FakeGitServer, add_commit, file_path, make_repo

TOKEN = "ghs_benchmarkToken0123456789"


@dataclass(frozen=True, slots=True)
class Run:
    cold_seconds: float
    warm_seconds: float
    spare_seconds: float  # making the spare tree, in the background
    cold_bytes: int  # sent by the server
    warm_bytes: int


def sent(server: FakeGitServer) -> int:
    return sum(request.response_bytes for request in server.requests)


async def one_run(server: FakeGitServer, repo: Path, work: Path, name: str, spare: bool) -> Run:
    """A cold clone, one new commit on the server, then a warm clone."""
    url = server.url(repo.relative_to(server.root).as_posix())
    async with MirrorCache(work / f"cache-{name}", spare_trees=spare) as cache:
        server.clear()
        started = time.perf_counter()
        await clone(url, work / f"cold-{name}", token=TOKEN, cache=cache)
        cold, cold_bytes = time.perf_counter() - started, sent(server)
        started = time.perf_counter()
        await cache.wait_idle()
        spare_seconds = time.perf_counter() - started
        add_commit(repo, {file_path(len(name)): f"changed in {name}\n".encode()}, message=name)
        server.clear()
        started = time.perf_counter()
        await clone(url, work / f"warm-{name}", token=TOKEN, cache=cache)
        warm, warm_bytes = time.perf_counter() - started, sent(server)
    return Run(cold, warm, spare_seconds, cold_bytes, warm_bytes)


def report(title: str, runs: list[Run]) -> None:
    cold = statistics.median(run.cold_seconds for run in runs)
    warm = statistics.median(run.warm_seconds for run in runs)
    spare = statistics.median(run.spare_seconds for run in runs)
    cold_bytes = statistics.median(run.cold_bytes for run in runs)
    warm_bytes = statistics.median(run.warm_bytes for run in runs)
    print(f"\n{title}, {len(runs)} runs")
    print(f"  cold clone (empty cache)          median {cold * 1000:7.1f} ms")
    print(f"  warm clone (mirror, 1 new commit) median {warm * 1000:7.1f} ms")
    if spare > 0.001:
        print(f"  spare tree, made in background    median {spare * 1000:7.1f} ms")
    print(f"  warm / cold                       {warm / cold:.2f} (target <= 0.30)")
    print(f"  bytes sent by the server          cold {cold_bytes:,.0f}, warm {warm_bytes:,.0f}")


async def clone_bench(files: int, runs: int) -> None:
    """Cold vs warm clones of a `files`-file repository, `runs` times each way."""
    with tempfile.TemporaryDirectory(prefix="neo-bench-git-") as temp:
        work = Path(temp)
        repo = work / "srv" / "bench" / "big.git"
        make_repo(repo, files=files, commits=3)
        results: dict[bool, list[Run]] = {True: [], False: []}
        with FakeGitServer(work / "srv", token=TOKEN) as server:
            # One untimed round warms the page cache and git's binaries.
            await one_run(server, repo, work, "warmup", True)
            for n in range(1, runs + 1):
                for spare in (True, False):
                    run = await one_run(server, repo, work, f"{n}-{spare}", spare)
                    results[spare].append(run)
                    print(
                        f"run {n} {'spare' if spare else 'no spare'}: "
                        f"cold {run.cold_seconds * 1000:7.1f} ms, "
                        f"warm {run.warm_seconds * 1000:7.1f} ms"
                    )
        print(f"\n{files} files")
        report("mirror cache with spare trees (the default)", results[True])
        report("mirror cache alone (spare_trees=False)", results[False])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    await clone_bench(args.files, args.runs)


if __name__ == "__main__":
    asyncio.run(main())
