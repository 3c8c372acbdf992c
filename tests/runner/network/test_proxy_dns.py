"""Names the proxy resolves through a DNS server, as it does outside the tests.

The other proxy tests' hosts are Docker aliases, which the engine answers
itself. Here one container on a network of the test's own is both a DNS
server (NEO_EGRESS_DNS points the proxy at it; the engine forwards what it
does not know there) and the web server its one name leads to, and it logs
each name it is asked for. So the test sees what the proxy looks up: a
listed name, and never a name nobody allowed (a request for one sends
nothing out, not even a query that could carry data in its name).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker import DockerClient

from runner.errors import ConfigError
from runner.network import plan, policy_of
from runner.network.accesses import EgressReport
from runner.sandbox.factory import (
    EGRESS_DNS_VARIABLE,
    EGRESS_NETWORKS_VARIABLE,
    SandboxChoice,
    open_sandbox,
)
from tests.runner.network.conftest import LABEL, address_on, public_network
from tests.runner.sandbox.conftest import SANDBOX_IMAGE

LISTED = "listed.example"
# Listed too, but the DNS server answers it with loopback: the proxy's own.
LOOPING = "looping.example"
# Listed too, answered with the host's own addresses: its address on the
# proxy's network (the bridge's gateway), and on another network of the test's.
HOSTED = "hosted.example"
ELSEWHERE = "elsewhere.example"

# A DNS server on 53/udp answering LISTED with the container's own address
# (A), LOOPING with 127.0.0.1, each NAME=ADDRESS argument's name with its
# address, and no address otherwise (NXDOMAIN), printing "query NAME" for
# each question; and an HTTP server on 80 answering "resolved <path>".
SERVER = r"""
import http.server, socket, struct, sys, threading
listed, looping = sys.argv[1:3]
own = socket.inet_aton(socket.gethostbyname(socket.gethostname()))
more = dict(argument.split("=") for argument in sys.argv[3:])

def answer(query):
    ident, = struct.unpack(">H", query[:2])
    at, labels = 12, []
    while query[at]:
        labels.append(query[at + 1 : at + 1 + query[at]].decode("ascii", "replace"))
        at += 1 + query[at]
    qtype, = struct.unpack(">H", query[at + 1 : at + 3])
    question = query[12 : at + 5]
    name = ".".join(labels).lower()
    print("query", name, flush=True)
    record, code = b"", 3
    if name in (listed, looping) or name in more:
        code = 0
        if qtype == 1:
            address = own if name == listed else socket.inet_aton(more.get(name, "127.0.0.1"))
            record = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + address
    header = struct.pack(">HHHHHH", ident, 0x8180 | code, 1, 1 if record else 0, 0, 0)
    return header + question + record

def dns():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("", 53))
    while True:
        query, peer = udp.recvfrom(512)
        try:
            udp.sendto(answer(query), peer)
        except Exception as error:
            print("bad query", error, flush=True)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("resolved %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

threading.Thread(target=dns, daemon=True).start()
server = http.server.ThreadingHTTPServer(("", 80), Handler)
print("serving", flush=True)
server.serve_forever()
"""


@dataclass(frozen=True)
class Resolver:
    client: DockerClient
    container: str
    network: str  # the proxy's one network, where the resolver is
    address: str  # the resolver's address on it
    gateway: str  # the host's address on it (198.18/15: in no private range)
    elsewhere: str  # the host's address on another network of the test's, the proxy not on it

    def queries(self) -> list[str]:
        """The names asked for so far."""
        log = self.client.api.logs(self.container).decode()
        return [line.split()[1] for line in log.splitlines() if line.startswith("query ")]


@pytest.fixture(scope="module")
def resolver(docker_client: DockerClient, egress_image: str) -> Iterator[Resolver]:
    tag = secrets.token_hex(3)
    labels = {LABEL: f"dns-{tag}"}
    api = docker_client.api
    network = public_network(docker_client, f"neo-test-dns-{tag}", labels)
    other = public_network(docker_client, f"neo-test-dns-other-{tag}", labels)
    name = f"neo-test-dns-{tag}"
    gateway, elsewhere = gateway_of(docker_client, network), gateway_of(docker_client, other)
    try:
        api.create_container(
            SANDBOX_IMAGE,
            entrypoint=[
                "python3",
                "-c",
                SERVER,
                LISTED,
                LOOPING,
                f"{HOSTED}={gateway}",
                f"{ELSEWHERE}={elsewhere}",
            ],
            name=name,
            user="0",
            labels=labels,
            host_config=api.create_host_config(network_mode=network, init=True),
        )
        api.start(name)
        for _ in range(300):
            if b"serving" in api.logs(name):
                break
            time.sleep(0.1)
        address = address_on(docker_client, name, network)
        yield Resolver(docker_client, name, network, address, gateway, elsewhere)
    finally:
        api.remove_container(name, force=True)
        api.remove_network(network)
        api.remove_network(other)


def gateway_of(client: DockerClient, network: str) -> str:
    """The host's address on `network`: its bridge's (`public_network` names it)."""
    return str(client.api.inspect_network(network)["IPAM"]["Config"][0]["Gateway"])


@contextlib.asynccontextmanager
async def host_server(address: str) -> AsyncIterator[tuple[int, list[str]]]:
    """A TCP server on the host at `address` that answers any request with
    an HTTP 200; its port, and the peers that connected (none: it was never reached)."""
    peers: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(str(writer.get_extra_info("peername")))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhost\n")
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, address, 0)
    async with server:
        yield server.sockets[0].getsockname()[1], peers


CURL = 'curl -s -o /dev/null -w "%{http_code} %{http_connect}" --max-time 20'


async def outputs(
    resolver: Resolver,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    allowed: list[str],
    commands: list[str],
) -> tuple[list[str], EgressReport]:
    """What each of `commands` printed in a docker sandbox allowed `allowed`, its
    proxy resolving through `resolver`; and what the proxy refused."""
    monkeypatch.setenv(EGRESS_NETWORKS_VARIABLE, resolver.network)
    monkeypatch.setenv(EGRESS_DNS_VARIABLE, resolver.address)
    report = EgressReport()
    job = plan(policy_of(allowed), None)
    printed = []
    async with open_sandbox(
        SandboxChoice("docker"), tmp_path, job_id="test-egress-dns", network=job, report=report
    ) as box:
        for command in commands:
            done = await box.run(["bash", "-c", command], timeout=60)
            printed.append(done.output.decode().strip())
    return printed, report


async def test_a_listed_name_is_looked_up_and_a_name_nobody_allowed_never_is(
    resolver: Resolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"leak-{secrets.token_hex(4)}.example"
    commands = [
        f"curl -sS --max-time 20 http://{LISTED}/page",
        f"{CURL} http://{secret}/data",
        f"{CURL} -p http://{secret}:443/data",
    ]

    (reached, refused, tunnel), _ = await outputs(
        resolver, tmp_path, monkeypatch, [LISTED], commands
    )

    assert reached == "resolved /page"
    assert refused == "403 000"
    assert tunnel == "000 403"
    asked = resolver.queries()
    # The server's log shows the proxy's look-up of the listed name ...
    assert LISTED in asked
    # ... and nothing of the name no one allowed.
    assert not [name for name in asked if secret in name]


async def test_a_listed_name_whose_answer_is_loopback_reaches_nothing_of_the_proxys_own(
    resolver: Resolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repository lists a name it controls, then points it at 127.0.0.1: the
    # proxy's own loopback, where the proxy itself listens (3128).
    commands = [
        f"{CURL} http://{LOOPING}/",
        f"{CURL} http://{LOOPING}:3128/",
        f"{CURL} -p http://{LOOPING}:443/",
    ]

    (plain, own_port, tunnel), report = await outputs(
        resolver, tmp_path, monkeypatch, [LOOPING, f"{LOOPING}:3128"], commands
    )

    assert plain == "403 000"
    assert own_port == "403 000"
    assert tunnel == "000 403"
    assert LOOPING in resolver.queries()  # refused for its answer, not for its name
    assert {(entry.host, entry.reason) for entry in report.blocked} == {
        (LOOPING, "address"),
        (f"{LOOPING}:3128", "address"),
    }


async def test_a_listed_name_whose_answer_is_the_hosts_own_address_reaches_nothing_on_the_host(
    resolver: Resolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repository lists names it controls and points them at the host: at
    # its address on the proxy's own network, and at its address on another
    # bridge. Both are in 198.18/15, in no private range, where a server the
    # test starts listens. So does a repository that lists the address itself.
    async with (
        host_server(resolver.gateway) as (here, here_peers),
        host_server(resolver.elsewhere) as (there, there_peers),
    ):
        allowed = [f"{HOSTED}:{here}", f"{ELSEWHERE}:{there}", f"{resolver.gateway}:{here}"]
        commands = [
            f"{CURL} http://{HOSTED}:{here}/",
            f"{CURL} -p http://{HOSTED}:{here}/",
            f"{CURL} http://{ELSEWHERE}:{there}/",
            f"{CURL} -p http://{ELSEWHERE}:{there}/",
            f"{CURL} http://{resolver.gateway}:{here}/",
        ]
        printed, report = await outputs(resolver, tmp_path, monkeypatch, allowed, commands)

    assert printed == ["403 000", "000 403", "403 000", "000 403", "403 000"]
    assert here_peers == []
    assert there_peers == []
    asked = resolver.queries()
    # Refused for their answers, not their names.
    assert HOSTED in asked
    assert ELSEWHERE in asked
    assert {(entry.host, entry.reason) for entry in report.blocked} == {
        (f"{HOSTED}:{here}", "address"),
        (f"{ELSEWHERE}:{there}", "address"),
        (f"{resolver.gateway}:{here}", "address"),
    }


async def test_a_bad_dns_address_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EGRESS_DNS_VARIABLE, "10.0.0.53, dns.example")
    job = plan(policy_of([LISTED]), None)

    with pytest.raises(ConfigError) as raised:
        async with open_sandbox(
            SandboxChoice("docker"), tmp_path, job_id="test-egress-bad-dns", network=job
        ):
            pass

    assert str(raised.value) == "NEO_EGRESS_DNS: 'dns.example' is not an IP address"
