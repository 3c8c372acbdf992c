"""What the egress proxy costs: `pip install` from a local index through it, against without it.

A package index of PACKAGES wheels of SIZE MiB each (incompressible data, so
the bytes really travel) is served by a threaded HTTP server on a Docker
network of the benchmark's own (198.18.0.0/15: no outside address). The
same `pip install` (no cache, into a scratch directory) runs, alternately:

- through the proxy: in a docker sandbox (network none) whose only way out
  is the job's egress proxy, through the exec server's relay and squid;
- directly: in a container of the same image on the index's network.

Each is timed inside its container, so only the install is measured. Then a
raw transfer (one file of TRANSFER MiB with curl) the same two ways. Prints
medians and the throughput ratio (direct time / proxy time; 1.0 is no cost).

    uv run python -m bench.egress [--image neo-sandbox:local] [--packages 20] [--size 4]
        [--runs 5] [--transfer 256]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import os
import secrets
import statistics
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.types import IPAMConfig, IPAMPool

from runner.network import plan, policy_of
from runner.network.proxy import EgressProxy
from runner.sandbox.docker import DockerSandbox, docker_client

MiB = 1024 * 1024
INDEX = "index.bench"
LABEL = "neo.bench"

SERVER = r"""
import functools, http.server
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/srv")
handler.func.log_message = lambda *args: None
http.server.ThreadingHTTPServer(("", 80), handler).serve_forever()
"""

# Runs ARGV, prints the seconds it took; the timing stays inside the container.
TIMED = (
    "import subprocess, sys, time; t = time.perf_counter();"
    " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
    " print(time.perf_counter() - t)"
)


def wheel(name: str, size: int) -> tuple[str, bytes]:
    """A wheel of module `name` carrying `size` bytes of random data."""
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{name}/payload.bin": os.urandom(size),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: neo-bench\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as archive:
        for path, content in files.items():
            archive.writestr(path, content)
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(content)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return f"{name}-1.0-py3-none-any.whl", data.getvalue()


def write_index(root: Path, names: list[str], size: int, transfer: int) -> None:
    (root / "files").mkdir()
    for name in names:
        filename, data = wheel(name, size)
        (root / "files" / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        page = root / "simple" / name.replace("_", "-")
        page.mkdir(parents=True)
        link = f'<a href="/files/{filename}#sha256={digest}">{filename}</a>'
        (page / "index.html").write_text(f"<html><body>{link}</body></html>\n")
    (root / "blob.bin").write_bytes(os.urandom(transfer))
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


@contextmanager
def served_index(client: DockerClient, image: str, root: Path) -> Iterator[str]:
    """The index on a network of its own; the network's name."""
    name = f"neo-bench-index-{secrets.token_hex(3)}"
    network = None
    for _ in range(20):
        subnet = f"198.{18 + secrets.randbelow(2)}.{secrets.randbelow(256)}.0/24"
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)])
        try:
            client.api.create_network(name, driver="bridge", labels={LABEL: "1"}, ipam=ipam)
        except APIError as error:
            if "overlap" in str(error).lower():
                continue
            raise
        network = name
        break
    if network is None:
        raise RuntimeError("no free /24 in 198.18.0.0/15")
    try:
        api = client.api
        api.create_container(
            image,
            entrypoint=["python3", "-c", SERVER],
            name=name,
            user="0",
            labels={LABEL: "1"},
            host_config=api.create_host_config(
                network_mode=network, binds={str(root): {"bind": "/srv", "mode": "ro"}}
            ),
        )
        api.disconnect_container_from_network(name, network)
        api.connect_container_to_network(name, network, aliases=[INDEX])
        api.start(name)
        yield network
    finally:
        with suppress(NotFound):
            client.api.remove_container(name, force=True)
        client.api.remove_network(network)


def pip_argv(names: list[str]) -> list[str]:
    return [
        *("pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-deps"),
        *("--index-url", f"http://{INDEX}/simple/", "--trusted-host", INDEX),
        *("--target", "/tmp/pip-target", "--upgrade", *names),
    ]


def curl_argv() -> list[str]:
    return ["curl", "-sS", "-o", "/dev/null", f"http://{INDEX}/blob.bin"]


def direct(client: DockerClient, image: str, network: str, argv: list[str]) -> float:
    """Seconds `argv` took in a container on the index's own network."""
    output = client.containers.run(
        image,
        ["python3", "-c", TIMED, *argv],
        network=network,
        remove=True,
        tmpfs={"/tmp": "size=2g", "/home/neo": "size=256m,uid=1000"},
        environment={"HOME": "/home/neo"},
    )
    return float(output.decode().strip().splitlines()[-1])


async def proxied(sandbox: DockerSandbox, argv: list[str]) -> float:
    result = await sandbox.run(["python3", "-c", TIMED, *argv], timeout=1800)
    if result.exit_code != 0:
        raise RuntimeError(result.output.decode(errors="replace")[-2000:])
    return float(result.output.decode().strip().splitlines()[-1])


def report(name: str, through: list[float], straight: list[float], moved: int) -> None:
    proxy, plain = statistics.median(through), statistics.median(straight)
    print(
        f"  {name:<22} direct {plain:7.2f} s ({moved / MiB / plain:7.1f} MiB/s)"
        f"   proxy {proxy:7.2f} s ({moved / MiB / proxy:7.1f} MiB/s)"
        f"   throughput ratio {plain / proxy:5.2f}x"
    )


async def bench(args: argparse.Namespace) -> None:
    client = docker_client()
    names = [f"benchpkg{n}" for n in range(args.packages)]
    with tempfile.TemporaryDirectory(prefix="neo-bench-egress-") as scratch:
        root = Path(scratch) / "index"
        root.mkdir()
        write_index(root, names, args.size * MiB, args.transfer * MiB)
        tree = Path(scratch) / "tree"
        tree.mkdir()
        with served_index(client, args.image, root) as network:
            job = plan(policy_of([INDEX], "read"), None)
            async with (
                EgressProxy.start(
                    client, job_id="bench-egress", plan=job, networks=(network,)
                ) as proxy,
                DockerSandbox.start(
                    tree, image=args.image, job_id="bench-egress", egress=proxy, client=client
                ) as sandbox,
            ):
                # One of each first: caches warm, images loaded.
                await proxied(sandbox, pip_argv(names[:1]))
                await asyncio.to_thread(direct, client, args.image, network, pip_argv(names[:1]))
                installs: tuple[list[float], list[float]] = ([], [])
                transfers: tuple[list[float], list[float]] = ([], [])
                for _ in range(args.runs):
                    installs[0].append(await proxied(sandbox, pip_argv(names)))
                    installs[1].append(
                        await asyncio.to_thread(
                            direct, client, args.image, network, pip_argv(names)
                        )
                    )
                    transfers[0].append(await proxied(sandbox, curl_argv()))
                    transfers[1].append(
                        await asyncio.to_thread(direct, client, args.image, network, curl_argv())
                    )
                blocked = proxy.blocked(sandbox.command_text)
    wheels = args.packages * args.size * MiB
    print(f"egress proxy, {args.runs} runs each, medians ({os.cpu_count()} CPUs):")
    report(f"pip install {args.packages}x{args.size} MiB", *installs, wheels)
    report(f"curl {args.transfer} MiB", *transfers, args.transfer * MiB)
    print(f"  refused by the proxy: {len(blocked)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="neo-sandbox:local")
    parser.add_argument("--packages", type=int, default=20)
    parser.add_argument("--size", type=int, default=4, help="MiB per wheel")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--transfer", type=int, default=256, help="MiB for the raw transfer")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
