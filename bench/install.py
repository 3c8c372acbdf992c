"""From a fresh Debian container to `neo --help`: what a new user waits for.

Each run starts a container of the Debian base (the one scripts/build-images
used, or `--base`), with this tree's files copied in as a clone, and times:

1. `apt-get update && apt-get install -y python3`: the one package a user adds;
2. the README's install command (its first `sh` block), as root;
3. the first `neo --help` in a new login shell (Python compiles Neo's modules).

PyPI and Debian's mirror are reached over the network as a user's machine
would; nothing is cached between runs but what the engine keeps of the base
image. Prints each step's median and the total.

    uv run python -m bench.install [--runs 3] [--base neo-debian:bookworm]
"""

from __future__ import annotations

import argparse
import statistics

import docker

from tests.install_rehearsal import base_image, fresh_container, install_command, run_in


def one_run(client: docker.DockerClient, base: str) -> tuple[float, float, float]:
    with fresh_container(client, base) as container:
        apt = run_in(
            container,
            "apt-get update -qq && apt-get install -y -qq python3 >/dev/null",
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )
        assert apt.status == 0, apt.output[-2000:]
        install = run_in(container, f"cd /src && {install_command()}")
        assert install.status == 0, install.output[-2000:]
        helped = run_in(container, "bash -lc 'neo --help >/dev/null'")
        assert helped.status == 0, helped.output[-2000:]
    return apt.seconds, install.seconds, helped.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", help="a Debian image (default: the sandbox image's base)")
    args = parser.parse_args()
    client = docker.from_env(timeout=900)
    base = args.base or base_image(client)
    runs = [one_run(client, base) for _ in range(args.runs)]
    apt, install, helped = (statistics.median(step) for step in zip(*runs, strict=True))
    total = statistics.median(sum(run) for run in runs)
    print(f"base {base}, {args.runs} runs, medians")
    print(f"apt-get install python3   {apt:6.1f} s")
    print(f"install command           {install:6.1f} s")
    print(f"first neo --help          {helped:6.1f} s")
    print(f"fresh container → neo --help: {total:.1f} s")


if __name__ == "__main__":
    main()
