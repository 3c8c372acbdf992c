"""A proxy launched before its job knows its plan: `EgressProxy.launch`, then
`configure` and `begin`, as a job does while it clones (runner/sandbox/launch.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from docker import DockerClient

from runner.network import plan, policy_of
from runner.network.proxy import EgressProxy
from runner.sandbox.docker import DockerSandbox
from tests.runner.network.conftest import Servers
from tests.runner.network.test_proxy import CURL, _job_objects, _running, sh, unique
from tests.runner.sandbox.conftest import REPO, SANDBOX_IMAGE


async def test_a_proxy_begun_in_the_agents_phase_serves_its_policy_from_the_first_request(
    docker_client: DockerClient, servers: Servers, tmp_path: Path
) -> None:
    job_id = unique("test-egress-launch")
    proxy = await EgressProxy.launch(docker_client, job_id=job_id, networks=servers.networks)
    try:
        # Setup's policy would let other.test through (any public host): the
        # agent's, which is the one served, does not.
        proxy.configure(plan(policy_of(["web.test"]), None))
        proxy.begin("agent")
        async with DockerSandbox.start(
            tmp_path, image=SANDBOX_IMAGE, job_id=job_id, egress=proxy, client=docker_client
        ) as box:
            reached = await sh(box, "curl -sS --max-time 20 http://web.test/first")
            # Once seen to time out under load (0 bytes in 20 s): if it fails,
            # a second try and what squid said tell which hop it was.
            diagnosis = ""
            if reached != "web GET /first":
                again = await sh(box, "curl -sS --max-time 20 http://web.test/again")
                diagnosis = f"a second try: {again!r}; squid and socat said:\n{proxy.said()}"
            refused = await sh(box, f"{CURL} http://other.test/")
            # Said once, the first phase stays.
            proxy.begin("setup")
            tunnel = await sh(box, f"{CURL} -p http://other.test:443/")
            heard = proxy.said()
    finally:
        await proxy.aclose()

    assert reached == "web GET /first", diagnosis
    # What squid says on stderr is kept for a failure's report: here, its ports.
    assert "listening port: agent" in heard
    assert refused == "403 000"
    assert tunnel == "000 403"
    assert {(b.host, b.phase) for b in proxy.blocked(box.command_text)} == {("other.test", "agent")}
    assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}


async def test_a_proxy_never_told_its_plan_is_removed_whole(
    docker_client: DockerClient, servers: Servers
) -> None:
    job_id = unique("test-egress-unplanned")
    proxy = await EgressProxy.launch(docker_client, job_id=job_id, networks=servers.networks)
    assert len(_job_objects(docker_client, job_id)["containers"]) == 1

    await proxy.aclose()

    assert _job_objects(docker_client, job_id) == {"containers": [], "volumes": []}
    assert proxy.blocked(lambda ident: None) == ()


LAUNCHER = """
import asyncio, json, sys
from runner.sandbox.factory import SandboxChoice, launch_sandbox

async def main() -> None:
    async with launch_sandbox(SandboxChoice("docker"), job_id=sys.argv[1], network=True) as launch:
        started = await launch.engine()
        print(json.dumps({"proxy": started.proxy.container}), flush=True)
        await asyncio.sleep(300)

asyncio.run(main())
"""


async def test_a_launched_proxy_stops_with_its_runner_killed_before_the_plan(
    docker_client: DockerClient, servers: Servers
) -> None:
    # A worker killed while its job clones: the proxy is up, squid not yet.
    job_id = unique("test-egress-launch-sigkill")
    env = {**os.environ, "NEO_EGRESS_NETWORK": ",".join(servers.networks)}
    runner = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, job_id],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert runner.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(runner.stdout.readline), 120)
        assert json.loads(line)["proxy"]
        # Its start goes on in the background.
        for _ in range(600):
            if _running(docker_client, job_id):
                break
            await asyncio.sleep(0.1)
        assert len(_running(docker_client, job_id)) == 1
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(30)

    # Its stdin ends, and the script stops before it has read anything.
    for _ in range(200):
        if not _running(docker_client, job_id):
            break
        await asyncio.sleep(0.1)
    assert _running(docker_client, job_id) == []
