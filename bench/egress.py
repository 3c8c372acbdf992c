"""What the egress proxy costs: `pip install` from a local index through it, against without it.

A package index of PACKAGES wheels of SIZE MiB each (incompressible data, so
the bytes really travel) is served by a threaded HTTP server on a Docker
network of the benchmark's own (198.18.0.0/15: no outside address), over
HTTPS on 443 and plain HTTP on 80. The same `pip install` (no cache, into a
scratch directory) runs, alternately:

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

    uv run python -m bench.egress [--image neo-sandbox:local] [--packages 20] [--size 4]
        [--runs 5] [--transfer 256] [--gets 200]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import hashlib
import io
import os
import secrets
import statistics
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.types import IPAMConfig, IPAMPool

from bench.tls import issue
from runner.network import plan, policy_of
from runner.network.proxy import EgressProxy
from runner.network.relay import proxy_environment
from runner.sandbox.docker import WORKSPACE, DockerSandbox, docker_client

MiB = 1024 * 1024
INDEX = "index.bench"
LABEL = "neo.bench"

# Where the CA pip and curl trust is, in the sandbox (its tree) and in the
# direct arm's container alike.
CA = f"{WORKSPACE}/bench-ca.pem"
# The index's ways in, each measured: HTTPS is what PyPI and private indexes
# serve (squid tunnels it with CONNECT); HTTP goes through squid's store.
SCHEMES = ("http", "https")

# HTTP on 80 and HTTPS on 443 (the certificate in /tls); the handshake in the
# request's thread, not in accept, so one connection's holds no other.
# TCP_NODELAY, as nginx and CDNs set it: with Nagle, a response's small
# writes after TLS 1.3's session tickets wait for the client's delayed ACK.
SERVER = r"""
import functools, http.server, ssl, threading
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/srv")
handler.func.log_message = lambda *args: None
handler.func.disable_nagle_algorithm = True
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tls/server.pem", "/tls/server.key")

class TLSServer(http.server.ThreadingHTTPServer):
    def finish_request(self, request, address):
        with context.wrap_socket(request, server_side=True) as tls:
            super().finish_request(tls, address)

plain = http.server.ThreadingHTTPServer(("", 80), handler)
threading.Thread(target=plain.serve_forever, daemon=True).start()
TLSServer(("", 443), handler).serve_forever()
"""

# Runs ARGV, prints the seconds it took and the CPU seconds it used; the
# timing stays inside the container.
TIMED = (
    "import resource, subprocess, sys, time; t = time.perf_counter();"
    " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
    " u = resource.getrusage(resource.RUSAGE_CHILDREN);"
    " print(time.perf_counter() - t, u.ru_utime + u.ru_stime)"
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


def write_credentials(tree: Path, tls: Path) -> None:
    """A new CA into the sandbox's `tree` (at CA there), the index's certificate
    and key into `tls`: readable by the index's root and the sandbox's uid."""
    issued = issue(INDEX)
    for path, text in (
        (tree / Path(CA).name, issued.ca),
        (tls / "server.pem", issued.certificate),
        (tls / "server.key", issued.key),
    ):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text)
        path.chmod(0o644)


@contextmanager
def served_index(client: DockerClient, image: str, root: Path, tls: Path) -> Iterator[str]:
    """The index in `root` on a network of its own, over HTTP and HTTPS (the
    server's certificate and key in `tls`); the network's name."""
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
                network_mode=network,
                binds={
                    str(root): {"bind": "/srv", "mode": "ro"},
                    str(tls): {"bind": "/tls", "mode": "ro"},
                },
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


def commands(args: argparse.Namespace, names: list[str]) -> list[tuple[str, list[str], int]]:
    """What is timed both ways, each run: a label, the argv, the bytes it moves."""
    wheels, transfer = args.packages * args.size * MiB, args.transfer * MiB
    pip = f"pip install {args.packages}x{args.size} MiB"
    return [
        *((f"{pip} {scheme.upper()}", pip_argv(names, scheme), wheels) for scheme in SCHEMES),
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
        f"  {name:<28} direct {plain:7.2f} s ({moved / MiB / plain:7.1f} MiB/s)"
        f"   proxy {proxy:7.2f} s ({moved / MiB / proxy:7.1f} MiB/s)"
        f"   throughput ratio {plain / proxy:5.2f}x"
    )
    print(
        f"  {'':<28} CPU: the command {statistics.median(straight.cpu):.2f} s direct,"
        f" {statistics.median(through.cpu):.2f} s through the proxy;"
        f" the proxy's container {statistics.median(through.proxy_cpu):.2f} s"
    )


async def bench(args: argparse.Namespace) -> None:
    client = docker_client()
    names = [f"benchpkg{n}" for n in range(args.packages)]
    with tempfile.TemporaryDirectory(prefix="neo-bench-egress-") as scratch:
        root = Path(scratch) / "index"
        root.mkdir()
        write_index(root, names, args.size * MiB, args.transfer * MiB)
        tree, tls = Path(scratch) / "tree", Path(scratch) / "tls"
        write_credentials(tree, tls)
        with served_index(client, args.image, root, tls) as network:
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
                runs = commands(args, names)
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
    print(
        f"egress proxy, {args.runs} runs each, medians"
        f" ({cpus} CPUs, load average {load:.1f} to {end:.1f}):"
    )
    for label, _, moved in runs:
        report(label, *arms[label], moved)
    proxy_ms, plain_ms = (1000 * statistics.median(arm.wall) / args.gets for arm in pages)
    print(
        f"  {args.gets} GETs, one connection  direct {plain_ms:5.2f} ms a request"
        f"   proxy {proxy_ms:5.2f} ms a request   added {proxy_ms - plain_ms:5.2f} ms"
    )
    print(f"  refused by the proxy: {len(blocked)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="neo-sandbox:local")
    parser.add_argument("--packages", type=int, default=20)
    parser.add_argument("--size", type=int, default=4, help="MiB per wheel")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--transfer", type=int, default=256, help="MiB for the raw transfer")
    parser.add_argument("--gets", type=int, default=200, help="requests on one connection")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
