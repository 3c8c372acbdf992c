"""What the docker sandbox costs, side by side with the alternatives.

Prints, in one run on a built image:
- container ready: `DockerSandbox.start` until the sandbox is handed out
  (create, start, agent bootstrap), median of N starts, and the removal
  that follows;
- one tool call running `true`: through the exec channel, through a plain
  `docker exec` on the same container (the SDK's exec_run), and as a local
  subprocess (LocalSandbox);
- reading a 1 MB file through the channel, and writing it;
- cloning a 5,000-file repository from a local git server, cold vs warm
  mirror cache (the same figures as bench/git_clone.py).

    uv run python -m bench.sandbox [--image neo-sandbox:local] [--starts 10] [--calls 200]
        [--clone-files 5000] [--clone-runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from docker import DockerClient

from bench.git_clone import clone_bench
from runner.sandbox import LocalSandbox
from runner.sandbox.docker import DockerSandbox, docker_client

MB = 1024 * 1024


def line(name: str, samples: list[float], baseline: float | None = None) -> str:
    median = statistics.median(samples)
    p90 = sorted(samples)[int(len(samples) * 0.9)]
    ratio = f"{median / baseline:8.1f}x" if baseline else ""
    return f"  {name:<34} median {median * 1000:9.2f} ms   p90 {p90 * 1000:9.2f} ms {ratio}"


async def timed(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def starts(client: DockerClient, image: str, tree: Path, count: int) -> None:
    ready: list[float] = []
    removed: list[float] = []
    for number in range(count):
        started = time.perf_counter()
        async with DockerSandbox.start(
            tree, image=image, job_id=f"bench-{number}", client=client
        ) as sandbox:
            ready.append(time.perf_counter() - started)
            await sandbox.run(["true"], timeout=10)
            closing = time.perf_counter()
        removed.append(time.perf_counter() - closing)
    print(f"container lifecycle ({count} starts)")
    print(line("ready (target median <= 1000 ms)", ready))
    print(line("removed at exit", removed))


async def calls(client: DockerClient, image: str, tree: Path, count: int) -> None:
    local = LocalSandbox(tree)
    (tree / "one-mb.bin").write_bytes(os.urandom(MB))
    async with DockerSandbox.start(
        tree, image=image, job_id="bench-calls", client=client
    ) as sandbox:
        # Warm up each path once: first calls pay for imports and connections.
        await sandbox.run(["true"], timeout=10)
        await local.run(["true"], timeout=10)
        exec_run = client.api.exec_create(sandbox.container, ["true"])
        client.api.exec_start(exec_run["Id"])

        def docker_exec() -> None:
            created = client.api.exec_create(sandbox.container, ["true"])
            client.api.exec_start(created["Id"])

        local_samples = await timed(lambda: local.run(["true"], timeout=10), count)
        channel = await timed(lambda: sandbox.run(["true"], timeout=10), count)
        plain = await timed(lambda: asyncio.to_thread(docker_exec), max(count // 4, 10))
        data = (tree / "one-mb.bin").read_bytes()
        reads = await timed(lambda: sandbox.read("one-mb.bin"), max(count // 4, 10))
        writes = await timed(lambda: sandbox.write("one-mb-copy.bin", data), max(count // 4, 10))
        assert await sandbox.read("one-mb-copy.bin") == data

    baseline = statistics.median(local_samples)
    print(f"one tool call running `true` (ratio to the local subprocess; {count} calls)")
    print(line("local subprocess (LocalSandbox)", local_samples, baseline))
    print(line("exec channel (target <= 5 ms)", channel, baseline))
    print(line("plain docker exec (SDK)", plain, baseline))
    print("a 1 MB file through the channel")
    print(line("read", reads))
    print(line("write", writes))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="neo-sandbox:local")
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clone-files", type=int, default=5000)
    parser.add_argument("--clone-runs", type=int, default=3)
    args = parser.parse_args()
    client = docker_client()
    with tempfile.TemporaryDirectory() as directory:
        tree = Path(directory) / "tree"
        tree.mkdir()
        await starts(client, args.image, tree, args.starts)
        await calls(client, args.image, tree, args.calls)
    client.close()
    print("clone from a local git server")
    await clone_bench(args.clone_files, args.clone_runs)


if __name__ == "__main__":
    asyncio.run(main())
