"""A fork's "git bomb" checked out on the host: the plain pull request fetch versus the
fork's bounded checkout.

The base repository has a few files; pull request 1's head (`refs/pull/1/head`,
as a fork's is kept) adds `--files` copies of one blob of `--size` bytes, 1,000
to a directory: a few hundred kilobytes of objects, `files * size` bytes checked
out. It is served by the fake smart-HTTP server of tests/fakes on 127.0.0.1.
Each run clones the base into a fresh tree, then:

- plain: `runner.git.fetch_pull_request`, what a job did with any pull request's
  head before forks were bounded: fetch, then check out every file;
- bounded: `runner.fork.checkout_fork_head` with the default `CheckoutLimits`,
  what a job on a fork's pull request does now: it counts the files from the
  trees and refuses before writing one.

Prints, for each, the median seconds, the files and bytes the tree holds
afterwards, the bytes the server sent, and the bounded path's one line.

    uv run python -m bench.fork_checkout [--files 100000] [--size 4650] [--runs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from runner.fork import CheckoutLimits, Fork, ForkRefused, checkout_fork_head
from runner.git import MirrorCache, clone, fetch_pull_request
from tests.fakes.git_server import FakeGitServer, make_bomb, make_repo

TOKEN = "ghs_benchmarkToken0123456789"


@dataclass(frozen=True, slots=True)
class Outcome:
    seconds: float
    files: int
    bytes: int
    sent: int
    line: str


def _tree_size(tree: Path) -> tuple[int, int]:
    files = size = 0
    for directory, dirs, names in os.walk(tree):
        if directory == str(tree):
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            files += 1
            size += os.lstat(os.path.join(directory, name)).st_size
    return files, size


async def _once(server: FakeGitServer, url: str, work: Path, bounded: bool) -> Outcome:
    tree = work / "tree"
    async with MirrorCache(work / "mirrors", spare_trees=False) as cache:
        await clone(url, tree, token=TOKEN, cache=cache, ref="main")
    server.clear()
    line = "checked out"
    started = time.perf_counter()
    if bounded:
        try:
            await checkout_fork_head(
                tree,
                1,
                fork=Fork(limits=CheckoutLimits()),
                base="refs/remotes/origin/main",
                branch="neo/pr-1",
                url=url,
                token=TOKEN,
            )
        except ForkRefused as refused:
            line = str(refused)
    else:
        await fetch_pull_request(tree, 1, url=url, token=TOKEN, branch="neo/pr-1")
    seconds = time.perf_counter() - started
    files, size = _tree_size(tree)
    sent = sum(request.response_bytes for request in server.requests)
    shutil.rmtree(work / "tree")
    shutil.rmtree(work / "mirrors")
    return Outcome(seconds, files, size, sent, line)


def _report(name: str, outcomes: list[Outcome]) -> None:
    last = outcomes[-1]
    seconds = statistics.median(o.seconds for o in outcomes)
    print(
        f"{name:8} {seconds:8.2f} s  {last.files:>8,} files  {last.bytes / 2**20:8.1f} MiB"
        f"  server sent {last.sent / 1024:8.1f} KiB  ({last.line})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=4650)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="neo-bench-fork-") as scratch:
        root = Path(scratch)
        repo = root / "served" / "octo" / "hello.git"
        make_repo(repo, files=3)
        make_bomb(repo, 1, files=args.files, file_size=args.size)
        packed = sum(f.stat().st_size for f in repo.rglob("*") if f.is_file())
        print(
            f"fork head: {args.files:,} files of {args.size:,} bytes"
            f" ({args.files * args.size / 2**20:,.1f} MiB checked out);"
            f" the repository holds {packed / 1024:,.0f} KiB"
        )
        with FakeGitServer(root / "served", token=TOKEN) as server:
            url = server.url("octo/hello.git")
            for name, bounded in (("plain", False), ("bounded", True)):
                outcomes = [
                    asyncio.run(_once(server, url, root / f"{name}-{n}", bounded))
                    for n in range(args.runs)
                ]
                _report(name, outcomes)


if __name__ == "__main__":
    main()
