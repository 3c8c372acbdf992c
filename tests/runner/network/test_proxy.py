"""A sandbox's network through the real egress proxy (squid), on the real Docker engine.

The servers answer on the tests' own networks (see conftest); the sandbox
has nothing but loopback, and the proxy is its only way to them. Most tests
share one proxy and sandbox, allowed `web.test` and `private.test` with
`read` methods; those that need another policy, or a proxy's life, start
their own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from docker import DockerClient

from runner.network import OFF, Blocked, EgressReport, NetworkPolicy, parse_list, plan, policy_of
from runner.network.accesses import UNKNOWN_COMMAND
from runner.network.proxy import EGRESS_NETWORK, LABEL_EGRESS, EgressProxy
from runner.sandbox.base import Sandbox
from runner.sandbox.docker import LABEL_JOB, DockerSandbox
from runner.sandbox.factory import SandboxChoice, open_sandbox
from runner.sandbox.preparing import open_prepared
from runner.sandbox.requests import EnvironmentRequest
from runner.sandbox.setup_plan import explicit_plan
from tests.runner.network.conftest import Servers, pattern
from tests.runner.sandbox.conftest import REPO, SANDBOX_IMAGE

in_module_loop = pytest.mark.asyncio(loop_scope="module")

# `curl` printing the status of the request and of its CONNECT, and nothing
# else: "200 000" a plain request answered, "000 403" a tunnel refused, "200
# 200" an answer through a tunnel.
CURL = 'curl -s -o /dev/null -w "%{http_code} %{http_connect}" --max-time 20'
# A TCP connection straight to an address, without the proxy.
DIRECT = (
    "python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5);"
    ' print("connected")\''
)


@dataclass
class Shared:
    proxy: EgressProxy
    sandbox: DockerSandbox


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    docker_client: DockerClient, servers: Servers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Shared]:
    tree = tmp_path_factory.mktemp("egress") / "tree"
    tree.mkdir()
    job = plan(policy_of(["web.test", "private.test"], "read"), None)
    async with (
        EgressProxy.start(
            docker_client, job_id="test-egress-shared", plan=job, networks=servers.networks
        ) as proxy,
        DockerSandbox.start(
            tree,
            image=SANDBOX_IMAGE,
            job_id="test-egress-shared",
            egress=proxy,
            client=docker_client,
        ) as sandbox,
    ):
        yield Shared(proxy, sandbox)


async def sh(sandbox: Sandbox, command: str) -> str:
    result = await sandbox.run(["bash", "-c", command], timeout=60)
    return result.output.decode().strip()


async def refusal(shared: Shared, host: str) -> Blocked:
    """The report's entry for `host`, once the proxy's log line has come in."""
    for _ in range(200):
        found = {b.host: b for b in shared.proxy.blocked(shared.sandbox.command_text)}
        if host in found:
            return found[host]
        await asyncio.sleep(0.05)
    raise AssertionError(f"{host} is not reported as blocked")


def reported(shared: Shared) -> set[str]:
    return {b.host for b in shared.proxy.blocked(shared.sandbox.command_text)}


@in_module_loop
async def test_an_allowed_host_is_reached_in_plain_http_and_through_connect(
    shared: Shared,
) -> None:
    assert await sh(shared.sandbox, "curl -sS --max-time 20 http://web.test/hello") == (
        "web GET /hello"
    )
    assert await sh(shared.sandbox, f"{CURL} http://web.test/") == "200 000"
    # CONNECT to 443, as HTTPS does (the server speaks plain HTTP in the tunnel).
    assert await sh(shared.sandbox, f"{CURL} -p http://web.test:443/") == "200 200"
    assert await sh(shared.sandbox, f"{CURL} --head http://web.test/") == "200 000"
    assert await sh(shared.sandbox, f"{CURL} -X OPTIONS http://web.test/") == "200 000"
    assert "web.test" not in reported(shared)


@in_module_loop
async def test_another_host_is_refused_and_reported_with_its_command(shared: Shared) -> None:
    command = f"{CURL} http://other.test/ # fetch the other host"

    assert await sh(shared.sandbox, command) == "403 000"
    assert await sh(shared.sandbox, f"{CURL} -p http://other.test:443/") == "000 403"

    blocked = await refusal(shared, "other.test")
    assert blocked.command == command
    assert blocked.reason == "host"
    assert blocked.phase == "agent"


@in_module_loop
async def test_post_is_refused_under_read(shared: Shared) -> None:
    command = f"{CURL} -X POST -d x=1 http://web.test/form"

    assert await sh(shared.sandbox, command) == "403 000"

    blocked = await refusal(shared, "web.test")
    assert (blocked.command, blocked.reason) == (command, "method")


@in_module_loop
async def test_a_refusal_says_why_to_the_command(shared: Shared) -> None:
    # (After the POST test: the report keeps each host's first refusal.)
    # The body a plain HTTP client prints: one line for the model, no squid page.
    host = await sh(shared.sandbox, "curl -sS 'http://other.test/x?token=secret'")
    method = await sh(shared.sandbox, "curl -sS -X DELETE http://web.test/x")
    address = await sh(shared.sandbox, "curl -sS http://private.test/x")

    assert host.startswith(
        "Neo's egress proxy refused GET http://other.test/x?: other.test is not a host (or port)"
        " this job's network allows."
    )
    assert "secret" not in host  # squid strips the query from what it shows and logs
    assert method.startswith(
        "Neo's egress proxy refused DELETE http://web.test/x: this job's network allows only GET,"
    )
    assert address.startswith(
        "Neo's egress proxy refused GET http://private.test/x: private.test is at a private or"
        " local address"
    )


@in_module_loop
async def test_connect_to_a_port_other_than_443_is_refused(shared: Shared) -> None:
    for port in (8443, 80, 22):
        assert await sh(shared.sandbox, f"{CURL} -p http://web.test:{port}/") == "000 403"
        assert (await refusal(shared, f"web.test:{port}")).reason == "host"
    # Plain HTTP to an unlisted port is refused too.
    assert await sh(shared.sandbox, f"{CURL} http://web.test:8000/") == "403 000"


@in_module_loop
async def test_an_unlisted_ip_literal_is_refused_though_its_name_is_allowed(
    shared: Shared, servers: Servers
) -> None:
    assert await sh(shared.sandbox, f"{CURL} http://{servers.web}/") == "403 000"
    assert await sh(shared.sandbox, f"{CURL} -p http://{servers.web}:443/") == "000 403"

    assert (await refusal(shared, servers.web)).reason == "host"


@in_module_loop
async def test_a_redirect_to_a_host_not_allowed_is_refused(shared: Shared) -> None:
    url = "http://web.test/redirect?to=http://other.test/taken"
    command = f"{CURL} -L '{url}' # follow"

    # The redirect itself comes from an allowed host; following it is refused.
    assert await sh(shared.sandbox, f"{CURL} '{url}'") == "302 000"
    assert await sh(shared.sandbox, command) == "403 000"
    https = "http://web.test/redirect?to=https://other.test/taken"
    assert "403" in await sh(shared.sandbox, f"{CURL} -L '{https}'")

    assert "other.test" in reported(shared)


@in_module_loop
async def test_a_listed_name_that_resolves_to_a_private_address_is_refused(
    shared: Shared,
) -> None:
    # private.test is listed, but a repository's list never reaches a
    # private address: only the operator's does (see the ceiling's test).
    assert await sh(shared.sandbox, f"{CURL} http://private.test/") == "403 000"
    assert await sh(shared.sandbox, f"{CURL} -p http://private.test:443/") == "000 403"

    assert (await refusal(shared, "private.test")).reason == "address"


@in_module_loop
async def test_nothing_is_reached_without_the_proxy(
    shared: Shared, servers: Servers, docker_client: DockerClient
) -> None:
    proxy_address = docker_client.api.inspect_container(shared.proxy.container)["NetworkSettings"][
        "Networks"
    ][servers.public]["IPAddress"]
    targets = [
        (servers.web, 80),  # the allowed host's own address
        (servers.other, 80),
        (servers.private_address, 80),
        (proxy_address, 3128),  # the proxy's container itself
        ("172.17.0.1", 80),  # the host, on Docker's bridge
        ("web.test", 80),
    ]
    for host, port in targets:
        output = await sh(shared.sandbox, f"{DIRECT} {host} {port}")
        assert "connected" not in output, host
    # Whatever a command sets in its environment, there is no route.
    unset = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy"
    assert "000" in await sh(shared.sandbox, f"{unset} {CURL} http://{servers.web}/")
    assert await sh(shared.sandbox, "ls /sys/class/net") == "lo"


@in_module_loop
async def test_large_and_concurrent_transfers_arrive_whole(shared: Shared) -> None:
    size = 48 * 1024 * 1024
    expected = hashlib.sha256(pattern(size)).hexdigest()

    got = await sh(shared.sandbox, f"curl -sS http://web.test/bytes/{size} | sha256sum")
    assert got.split()[0] == expected
    # Through CONNECT too, as HTTPS would.
    got = await sh(shared.sandbox, f"curl -sS -p http://web.test:443/bytes/{size} | sha256sum")
    assert got.split()[0] == expected
    many = "for i in $(seq 40); do curl -s -o /dev/null -w '%{http_code}\\n' http://web.test/$i &"
    many += " done; wait"
    assert (await sh(shared.sandbox, many)).split() == ["200"] * 40


@in_module_loop
async def test_commands_are_pointed_at_the_relay(shared: Shared) -> None:
    env = await sh(shared.sandbox, "env")

    for line in (
        "HTTP_PROXY=http://127.0.0.1:3128",
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "npm_config_https_proxy=http://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1,::1",
    ):
        assert line in env.splitlines()


@in_module_loop
async def test_a_background_command_is_named_too(shared: Shared) -> None:
    command = f"sleep 0.2; {CURL} http://other.test:8000/bg"
    ident = await shared.sandbox.start_background(["bash", "-c", command])
    for _ in range(200):
        output = await shared.sandbox.background_output(ident)
        if output.exit_code is not None:
            break
        await asyncio.sleep(0.05)

    blocked = await refusal(shared, "other.test:8000")
    assert blocked.command == command


@in_module_loop
async def test_a_process_that_left_its_command_is_reported_as_unknown(shared: Shared) -> None:
    # setsid, then its parent exits: no command's group, session or ancestor.
    await sh(
        shared.sandbox, f"setsid bash -c 'sleep 0.3; {CURL} http://other.test:8443/' >&- 2>&- &"
    )
    await asyncio.sleep(1)
    # The command ended and killed its group; the escaped process ran on its own.
    blocked = await refusal(shared, "other.test:8443")
    assert blocked.command == UNKNOWN_COMMAND


@in_module_loop
async def test_the_proxy_holds_no_credential(shared: Shared, docker_client: DockerClient) -> None:
    info = docker_client.api.inspect_container(shared.proxy.container)

    names = {line.split("=", 1)[0] for line in info["Config"]["Env"] or []}
    assert names <= {"PATH"}
    assert info["HostConfig"]["CapDrop"] == ["ALL"]
    assert info["HostConfig"]["ReadonlyRootfs"]
    assert info["Config"]["User"] == "proxy"


async def test_all_methods_let_post_through(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    job = plan(policy_of(["web.test"], "all"), None)
    async with (
        EgressProxy.start(
            docker_client, job_id="test-all", plan=job, networks=servers.networks
        ) as proxy,
        DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id="test-all", egress=proxy, client=docker_client
        ) as sandbox,
    ):
        assert await sh(sandbox, "curl -sS -X POST http://web.test/form") == "web POST /form"
        # A body of 8 MiB goes up whole (the server answers with its sha256),
        # to a server that reads it as it comes and to one that reads it in
        # pieces 10 ms apart, slower than the sandbox sends: bookworm's squid
        # (5.7) cut that one with an empty reply once its request buffer was
        # full (squid bug 5405), every time.
        sent = await sh(sandbox, "head -c 8388608 /dev/urandom > up.bin; sha256sum up.bin")
        for path in ("/up", "/slow/0.01/up"):
            put = f"curl -sS -X PUT --data-binary @up.bin http://web.test{path} 2>&1"
            assert await sh(sandbox, put) == sent.split()[0], path
        assert await sh(sandbox, f"{CURL} -X DELETE http://web.test/") == "200 000"


async def test_a_listed_ip_literal_is_reached_and_admits_no_name(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    job = plan(policy_of([f"{servers.web}:8000"], "read"), None)
    async with (
        EgressProxy.start(
            docker_client, job_id="test-ip", plan=job, networks=servers.networks
        ) as proxy,
        DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id="test-ip", egress=proxy, client=docker_client
        ) as sandbox,
    ):
        assert await sh(sandbox, f"curl -sS http://{servers.web}:8000/ip") == "web GET /ip"
        assert await sh(sandbox, f"{CURL} http://{servers.web}/") == "403 000"
        # The name resolves to the address listed, which does not make it allowed.
        assert await sh(sandbox, f"{CURL} http://web.test:8000/") == "403 000"


async def test_the_operator_ceiling_bounds_the_repository(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    asked = policy_of(["web.test", "other.test", "private.test"], "all")
    job = plan(asked, parse_list("web.test,private.test", "read"))
    assert job.notes == (
        "the operator's NEO_NETWORK does not allow other.test",
        "the operator's NEO_NETWORK allows only read methods (GET, HEAD, OPTIONS)",
    )
    report = EgressReport()
    async with (
        EgressProxy.start(
            docker_client, job_id="test-ceiling", plan=job, networks=servers.networks
        ) as proxy,
        DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id="test-ceiling", egress=proxy, client=docker_client
        ) as sandbox,
    ):
        assert await sh(sandbox, f"{CURL} http://web.test/") == "200 000"
        assert await sh(sandbox, f"{CURL} http://other.test/") == "403 000"
        assert await sh(sandbox, f"{CURL} -X POST http://web.test/") == "403 000"
        # The operator listed it: it may be a private address.
        assert await sh(sandbox, "curl -sS http://private.test/") == "private GET /"
    report.blocked = proxy.blocked(sandbox.command_text)

    assert {(b.host, b.reason) for b in report.blocked} == {
        ("other.test", "host"),
        ("web.test", "method"),
    }


async def test_setup_reaches_public_hosts_and_the_agent_only_its_own(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    job = plan(policy_of(["web.test"], "read"), None)
    setup = [
        "curl -sS -X POST http://other.test/setup > setup-other.txt",
        f"{CURL} http://private.test/ > setup-private.txt",
    ]
    # Setup in a container of its own, the agent in another: one proxy for both.
    request = EnvironmentRequest(explicit_plan(setup, {}))
    async with (
        EgressProxy.start(
            docker_client, job_id="test-setup", plan=job, networks=servers.networks
        ) as proxy,
        open_prepared(
            docker_client,
            tmp_path,
            image=SANDBOX_IMAGE,
            job_id="test-setup",
            request=request,
            egress=proxy,
        ) as opened,
    ):
        sandbox = opened.box
        assert (tmp_path / "setup-other.txt").read_text() == "other POST /setup\n"
        assert (tmp_path / "setup-private.txt").read_text() == "403 000"
        assert await sh(sandbox, f"{CURL} http://other.test/") == "403 000"
        assert await sh(sandbox, f"{CURL} http://web.test/") == "200 000"
        blocked = {b.host: b for b in proxy.blocked(opened.command_text)}
    assert blocked["private.test"].phase == "setup"
    assert blocked["private.test"].reason == "address"
    assert blocked["other.test"].phase == "agent"


async def test_network_off_starts_no_proxy_and_reaches_nothing(
    docker_client: DockerClient,
    servers: Servers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    report = EgressReport()
    async with open_sandbox(
        SandboxChoice("docker"),
        tmp_path,
        job_id=(job_id := unique("test-off")),
        network=plan(OFF, None),
        report=report,
    ) as sandbox:
        assert isinstance(sandbox, DockerSandbox)
        proxies = docker_client.api.containers(
            filters={"label": [f"{LABEL_EGRESS}=1", f"{LABEL_JOB}={job_id}"]}
        )
        env = await sh(sandbox, "env")
        relay = await sh(sandbox, f"{CURL} -x http://127.0.0.1:3128 http://web.test/")
        direct = await sh(sandbox, f"{DIRECT} {servers.web} 80")

    assert proxies == []
    assert "HTTP_PROXY" not in env
    assert relay == "000 000"
    assert "connected" not in direct
    assert report.blocked == ()


PIP = "pip download --retries 0 --index-url https://index.test/simple/ -d /tmp/x left-pad"


async def test_open_sandbox_reports_the_refusals_when_the_block_ends(
    docker_client: DockerClient,
    servers: Servers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    report = EgressReport()
    job_id = unique("test-report")
    async with open_sandbox(
        SandboxChoice("docker"),
        tmp_path,
        job_id=job_id,
        network=plan(policy_of(["web.test"]), None),
        report=report,
    ) as sandbox:
        pip_said = await sh(sandbox, PIP)
        names = _job_objects(docker_client, job_id)
        assert len(names["containers"]) == 2
        assert len(names["volumes"]) == 1

    # (Once empty under load: what pip was told says whether squid refused it.)
    assert [(b.host, b.command) for b in report.blocked] == [("index.test", PIP)], pip_said[-600:]
    # Nothing of the job is left: no container, no volume.
    assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}


async def test_the_default_network_is_created_with_containers_kept_apart(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    job = plan(NetworkPolicy(), None)
    async with EgressProxy.start(docker_client, job_id="test-default-net", plan=job) as proxy:
        info = docker_client.api.inspect_container(proxy.container)

    networks = info["NetworkSettings"]["Networks"]
    assert list(networks) == [EGRESS_NETWORK]
    network = docker_client.api.inspect_network(EGRESS_NETWORK)
    assert network["Options"]["com.docker.network.bridge.enable_icc"] == "false"
    assert network["Labels"][LABEL_EGRESS] == "1"


async def test_a_missing_network_is_one_clear_error(
    docker_client: DockerClient, tmp_path: Path
) -> None:
    from runner.sandbox.base import SandboxError

    with pytest.raises(SandboxError) as raised:
        async with EgressProxy.start(
            docker_client,
            job_id=(job_id := unique("test-no-net")),
            plan=plan(NetworkPolicy(), None),
            networks=("neo-test-no-such-network",),
        ):
            pass

    assert str(raised.value) == (
        "docker network neo-test-no-such-network not found (the egress proxy's network)"
    )
    assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}


async def test_a_missing_proxy_image_is_one_clear_error(
    docker_client: DockerClient, servers: Servers
) -> None:
    from runner.sandbox.base import SandboxError

    with pytest.raises(SandboxError) as raised:
        async with EgressProxy.start(
            docker_client,
            job_id=(job_id := unique("test-no-image")),
            plan=plan(NetworkPolicy(), None),
            networks=servers.networks,
            image="neo-no-such-egress:never",
        ):
            pass

    assert str(raised.value) == (
        "egress proxy image neo-no-such-egress:never not found (build it with scripts/build-images)"
    )
    assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}


RUNNER = """
import asyncio, json, sys
from pathlib import Path
from runner.network import plan, policy_of
from runner.sandbox.factory import SandboxChoice, open_sandbox

async def main() -> None:
    job = plan(policy_of(["web.test"]), None)
    docker, tree = SandboxChoice("docker"), Path(sys.argv[1])
    async with open_sandbox(docker, tree, job_id=sys.argv[2], network=job) as box:
        print(json.dumps({"sandbox": box.container}), flush=True)
        await box.run(["sleep", "300"], timeout=600)

asyncio.run(main())
"""


async def test_nothing_is_left_running_after_the_runner_is_killed(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    job_id = unique("test-egress-sigkill")
    env = {**os.environ, "NEO_EGRESS_NETWORK": ",".join(servers.networks)}
    runner = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(tmp_path), job_id],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert runner.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(runner.stdout.readline), 120)
        assert json.loads(line)["sandbox"]
        objects = _job_objects(docker_client, job_id)
        assert len(objects["containers"]) == 2
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(30)

    # With the runner gone, stdin ends in both containers, and both stop.
    for _ in range(200):
        if not _running(docker_client, job_id):
            break
        await asyncio.sleep(0.1)
    assert _running(docker_client, job_id) == []

    # A restarted worker's next sandbox sweeps what is left (another test may sweep first).
    later = tmp_path / "later"
    later.mkdir()
    async with open_sandbox(SandboxChoice("docker"), later, job_id="test-egress-after-sigkill"):
        assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}


def unique(job_id: str) -> str:
    """`job_id` of this test run alone: others may share the engine, and a
    test that counts a job's containers must count only its own."""
    return f"{job_id}-{secrets.token_hex(3)}"


def _running(client: DockerClient, job_id: str) -> list[str]:
    found = client.api.containers(filters={"label": f"{LABEL_JOB}={job_id}"})
    return [str(c["Id"]) for c in found]


def _job_objects(client: DockerClient, job_id: str) -> dict[str, list[str]]:
    containers = client.api.containers(all=True, filters={"label": f"{LABEL_JOB}={job_id}"})
    volumes = client.api.volumes(filters={"label": f"{LABEL_JOB}={job_id}"}).get("Volumes") or []
    return {
        "containers": sorted(str(c["Id"]) for c in containers),
        "volumes": sorted(str(v["Name"]) for v in volumes),
    }
