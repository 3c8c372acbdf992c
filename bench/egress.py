"""What the egress proxy costs: `pip install` from a local index through it, against without it.

A package index of PACKAGES wheels of SIZE MiB each (incompressible data, so
the bytes really travel), or with --wheels DIR every wheel in DIR (a real
project's, such as the 21 of 6 MB that bench.environments says how to
download), is served by a threaded HTTP server on a Docker network of the
benchmark's own (198.18.0.0/15: no outside address), over HTTPS on 443 and
plain HTTP on 80. It keeps each connection for the next request, as PyPI and
every index server do; with --close it closes each after one answer
(HTTP/1.0), so each request pays what a new connection through the proxy
costs. The same `pip install` (no cache, into a scratch
directory) runs, alternately:

- through the proxy: in a docker sandbox (network none) whose only way out
  is the job's egress proxy, through the exec server's relay and squid;
- directly: in a container of the same image on the index's network.

HTTPS is the real case: PyPI and private indexes serve it, and squid
passes it through a CONNECT tunnel, a byte copy. Plain HTTP it forwards
through its store, writing to the client 4 KiB at a time (compiled in), so
the HTTP figures are the worse bound, and swing more from run to run. The
bench makes a CA and a certificate for the index at start (bench.tls);
pip and curl verify against that CA (`--cert`, `--cacert`) in both arms.

Both run as the sandbox's user with the sandbox's environment (the proxy's
variables left out of the direct one) and its tree (the CA), so they differ
only in the way out. Each is timed inside its container, so only the install
is measured. Then a raw transfer (one file of TRANSFER MiB with curl) the
same two ways over each scheme, and GETS requests for an index page on one
connection (the latency a request adds: a pip install asks for a page per
package). Prints medians and the throughput ratio (direct time / proxy time;
1.0 is no cost), the CPU seconds of the command and of the proxy's container
(on a loaded host a transfer waits for CPU: the relay and squid are copies
more), the load average around the runs, which the figures depend on, and
the requests the proxy refused (0 unless the policy lost the index).

    uv run python -m bench.egress [--image neo-sandbox:local]
        [--packages 20] [--size 4 | --wheels DIR]
        [--runs 5] [--transfer 256] [--gets 200] [--close]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from docker import DockerClient

from bench.package_index import (
    CA,
    INDEX,
    SCHEMES,
    random_wheels,
    real_wheels,
    served_index,
    write_credentials,
    write_index,
)
from runner.network import plan, policy_of
from runner.network.proxy import EgressProxy
from runner.network.relay import proxy_environment
from runner.sandbox.docker import WORKSPACE, DockerSandbox, docker_client

MiB = 1024 * 1024
# Runs ARGV, prints the seconds it took and the CPU seconds it used; the
# timing stays inside the container.
TIMED = (
    "import resource, subprocess, sys, time; t = time.perf_counter();"
    " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
    " u = resource.getrusage(resource.RUSAGE_CHILDREN);"
    " print(time.perf_counter() - t, u.ru_utime + u.ru_stime)"
)


# GETs of one page on one connection, to the proxy when HTTP_PROXY says one
# (http.client reconnects by itself when an answer closes the connection).
GETS = r"""
import http.client, os, sys
count, path = int(sys.argv[1]), sys.argv[2]
proxy = os.environ.get("HTTP_PROXY")
host, port = proxy.rsplit("/", 1)[1].rsplit(":", 1) if proxy else (sys.argv[3], "80")
target = f"http://{sys.argv[3]}{path}" if proxy else path
connection = http.client.HTTPConnection(host, int(port), timeout=60)
for _ in range(count):
    connection.request("GET", target)
    connection.getresponse().read()
"""


def gets_argv(count: int, name: str) -> list[str]:
    return ["python3", "-c", GETS, str(count), f"/simple/{name}/", INDEX]


def pip_argv(names: list[str], scheme: str) -> list[str]:
    """pip install of `names`; over HTTPS it verifies the index's certificate
    against CA (what an install from PyPI pays), over HTTP it trusts the host."""
    trust = ("--cert", CA) if scheme == "https" else ("--trusted-host", INDEX)
    return [
        *("pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-deps"),
        *("--index-url", f"{scheme}://{INDEX}/simple/", *trust),
        *("--target", "/tmp/pip-target", "--upgrade", *names),
    ]


def curl_argv(scheme: str) -> list[str]:
    trust = ["--cacert", CA] if scheme == "https" else []
    return ["curl", "-sS", "-o", "/dev/null", *trust, f"{scheme}://{INDEX}/blob.bin"]


def commands(
    args: argparse.Namespace, names: list[str], size: int
) -> list[tuple[str, list[str], int]]:
    """What is timed both ways, each run: a label, the argv, the bytes it moves
    (pip's: the `size` bytes of the wheels of projects `names`)."""
    transfer = args.transfer * MiB
    kind = f"{len(names)} real wheels" if args.wheels else f"{args.packages}x{args.size} MiB"
    pip = f"pip install {kind}"
    return [
        *((f"{pip} {scheme.upper()}", pip_argv(names, scheme), size) for scheme in SCHEMES),
        *((f"curl {args.transfer} MiB {s.upper()}", curl_argv(s), transfer) for s in SCHEMES),
    ]


@dataclass
class Arm:
    """One way of reaching the index: each run's seconds, and CPU seconds of the
    command and of the proxy's container."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    proxy_cpu: list[float] = field(default_factory=list)

    def add(self, sample: tuple[float, float], proxy_cpu: float = 0.0) -> None:
        self.wall.append(sample[0])
        self.cpu.append(sample[1])
        self.proxy_cpu.append(proxy_cpu)


def container_cpu(client: DockerClient, name: str) -> float:
    """CPU seconds container `name` has used."""
    stats = client.api.stats(name, stream=False, one_shot=True)
    return float(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9


def direct(
    client: DockerClient,
    image: str,
    network: str,
    env: dict[str, str],
    tree: Path,
    argv: list[str],
) -> tuple[float, float]:
    """Seconds `argv` took in a container on the index's own network, with the
    sandbox's environment `env` (the same pip, the same settings) and its tree
    (CA among it), and its CPU seconds."""
    output = client.containers.run(
        image,
        ["python3", "-c", TIMED, *argv],
        network=network,
        remove=True,
        user="1000:1000",
        tmpfs={"/tmp": "size=2g", "/home/neo": "size=256m,uid=1000"},
        volumes={str(tree): {"bind": WORKSPACE, "mode": "ro"}},
        environment=env,
    )
    return _sample(output)


async def sandbox_environment(sandbox: DockerSandbox) -> dict[str, str]:
    """The sandbox's environment without the proxy's variables."""
    result = await sandbox.run(["env", "-0"], timeout=30)
    pairs = (entry.partition("=") for entry in result.output.decode().split("\0") if entry)
    proxy = set(proxy_environment())
    return {key: value for key, _, value in pairs if key not in proxy}


async def proxied(
    client: DockerClient, proxy: EgressProxy, sandbox: DockerSandbox, argv: list[str], arm: Arm
) -> None:
    before = await asyncio.to_thread(container_cpu, client, proxy.container)
    result = await sandbox.run(["python3", "-c", TIMED, *argv], timeout=1800)
    if result.exit_code != 0:
        raise RuntimeError(result.output.decode(errors="replace")[-2000:])
    after = await asyncio.to_thread(container_cpu, client, proxy.container)
    arm.add(_sample(result.output), after - before)


def _sample(output: bytes) -> tuple[float, float]:
    wall, cpu = output.decode().strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def report(name: str, through: Arm, straight: Arm, moved: int) -> None:
    proxy, plain = statistics.median(through.wall), statistics.median(straight.wall)
    print(
        f"  {name:<32} direct {plain:7.2f} s ({moved / MiB / plain:7.1f} MiB/s)"
        f"   proxy {proxy:7.2f} s ({moved / MiB / proxy:7.1f} MiB/s)"
        f"   throughput ratio {plain / proxy:5.2f}x"
    )
    print(
        f"  {'':<32} CPU: the command {statistics.median(straight.cpu):.2f} s direct,"
        f" {statistics.median(through.cpu):.2f} s through the proxy;"
        f" the proxy's container {statistics.median(through.proxy_cpu):.2f} s"
    )


async def bench(args: argparse.Namespace) -> None:
    client = docker_client()
    paths = sorted(args.wheels.glob("*.whl")) if args.wheels else []
    if args.wheels and not paths:
        raise SystemExit(f"bench: no wheel in {args.wheels}")
    if paths:
        wheels = real_wheels(paths)
    else:
        wheels = random_wheels([f"benchpkg{n}" for n in range(args.packages)], args.size * MiB)
    names = [project for project, _, _ in wheels]
    with tempfile.TemporaryDirectory(prefix="neo-bench-egress-") as scratch:
        root = Path(scratch) / "index"
        root.mkdir()
        write_index(root, wheels, args.transfer * MiB)
        tree, tls = Path(scratch) / "tree", Path(scratch) / "tls"
        write_credentials(tree, tls)
        with served_index(client, args.image, root, tls, keep_alive=not args.close) as network:
            job = plan(policy_of([INDEX], "read"), None)
            async with (
                EgressProxy.start(
                    client, job_id="bench-egress", plan=job, networks=(network,)
                ) as proxy,
                DockerSandbox.start(
                    tree, image=args.image, job_id="bench-egress", egress=proxy, client=client
                ) as sandbox,
            ):
                env = await sandbox_environment(sandbox)
                here = functools.partial(direct, client, args.image, network, env, tree)
                # One of each first: caches warm, images loaded.
                for scheme in SCHEMES:
                    await proxied(client, proxy, sandbox, pip_argv(names[:1], scheme), Arm())
                    await asyncio.to_thread(here, pip_argv(names[:1], scheme))
                # Each command's (through the proxy, direct).
                runs = commands(args, names, sum(len(data) for _, _, data in wheels))
                arms = {label: (Arm(), Arm()) for label, _, _ in runs}
                pages = (Arm(), Arm())
                gets = gets_argv(args.gets, names[0])
                load = os.getloadavg()[0]
                for _ in range(args.runs):
                    for label, argv, _ in runs:
                        await proxied(client, proxy, sandbox, argv, arms[label][0])
                        arms[label][1].add(await asyncio.to_thread(here, argv))
                    await proxied(client, proxy, sandbox, gets, pages[0])
                    pages[1].add(await asyncio.to_thread(here, gets))
                blocked = proxy.blocked(sandbox.command_text)
    cpus, end = os.cpu_count(), os.getloadavg()[0]
    kept = "a new connection for each request" if args.close else "connections kept"
    print(
        f"egress proxy, {args.runs} runs each, medians, {kept}"
        f" ({cpus} CPUs, load average {load:.1f} to {end:.1f}):"
    )
    for label, _, moved in runs:
        report(label, *arms[label], moved)
    proxy_ms, plain_ms = (1000 * statistics.median(arm.wall) / args.gets for arm in pages)
    gets_label = f"{args.gets} GETs, one connection"
    print(
        f"  {gets_label:<32} direct {plain_ms:5.2f} ms a request"
        f"   proxy {proxy_ms:5.2f} ms a request   added {proxy_ms - plain_ms:5.2f} ms"
    )
    print(f"  refused by the proxy: {len(blocked)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="neo-sandbox:local")
    parser.add_argument("--packages", type=int, default=20)
    parser.add_argument("--size", type=int, default=4, help="MiB per wheel")
    parser.add_argument("--wheels", type=Path, help="serve these wheels instead of random ones")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--transfer", type=int, default=256, help="MiB for the raw transfer")
    parser.add_argument("--gets", type=int, default=200, help="requests on one connection")
    parser.add_argument(
        "--close", action="store_true", help="the index closes each connection after one answer"
    )
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
