"""The egress proxy's life: it comes up whatever the sandbox's image holds, says why
when it cannot, and what a dead runner left of it is swept.

The proxy's socket lives on a volume both containers mount. Docker copies an
image's files, owner and mode at a mount point into an empty named volume
("copy-up"); the proxy's own image gives the directory to squid's user, and
no sandbox image may change it. A prepared environment, committed from a
container that had the volume mounted, holds a root-owned /run/neo-egress: a
warm job's sandbox started before the socket was made took the volume from
squid's user, and the proxy never became ready.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient
from docker.errors import NotFound

from runner.network import plan, policy_of
from runner.network.program import failure_detail
from runner.network.proxy import LABEL_EGRESS, EgressProxy, sweep_egress
from runner.network.relay import SOCKET_DIR
from runner.sandbox.docker import LABEL_JOB, Limits, host_config
from runner.sandbox.owners import LABEL_PROCESS, LABEL_STARTED, owner_labels
from tests.runner.network.conftest import LABEL
from tests.runner.sandbox.conftest import SANDBOX_IMAGE


@pytest.fixture(scope="module")
def root_owned_image(docker_client: DockerClient) -> Iterator[str]:
    """The sandbox image with a root-owned, private /run/neo-egress holding a file,
    as a committed environment (or a custom image) may have it."""
    api = docker_client.api
    made = api.create_container(
        SANDBOX_IMAGE,
        entrypoint=["sh", "-c", f"mkdir -p {SOCKET_DIR} && touch {SOCKET_DIR}/planted"],
        user="0",
        labels={LABEL: "proxy-start"},
    )
    try:
        api.start(made)
        api.wait(made, timeout=60)
        committed = api.commit(made, changes=[f"LABEL {LABEL}=proxy-start"])
    finally:
        api.remove_container(made, force=True)
    try:
        yield str(committed["Id"])
    finally:
        api.remove_image(committed["Id"], force=True)


async def test_a_sandbox_image_with_the_socket_directory_cannot_take_the_proxys_volume(
    docker_client: DockerClient, egress_image: str, root_owned_image: str, tmp_path: Path
) -> None:
    job = plan(policy_of(["web.test"]), None)
    api = docker_client.api
    async with EgressProxy.start(docker_client, job_id="test-egress-copy-up", plan=job) as proxy:
        # The sandbox's container starts before the proxy's (its start has
        # not run yet: nothing here yields to the event loop), so its mount
        # meets the volume empty.
        box = api.create_container(
            root_owned_image,
            entrypoint=["sleep", "60"],
            labels={LABEL: "proxy-start"},
            host_config=api.create_host_config(
                **host_config(
                    tmp_path, user=(1000, 1000), limits=Limits(), egress_volume=proxy.volume
                )
            ),
        )
        try:
            api.start(box)
            await proxy.ready()
            listed = api.exec_create(box, ["ls", "-A", SOCKET_DIR])
            shown = api.exec_start(listed["Id"]).decode().split()
        finally:
            api.remove_container(box, force=True)

    assert shown == ["proxy.sock"]


@pytest.mark.parametrize(
    ("lines", "detail"),
    [
        # A relay that could not bind: socat's error, not squid's later chatter.
        (
            [
                "2026/12/03 00:01:33| Accepting HTTP Socket connections at conn4",
                "2026/12/03 00:01:33 socat[12] E bind(5, {AF=1 /run/neo-egress/proxy.sock},"
                " 28): Permission denied",
                "2026/12/03 00:01:34| storeLateRelease: released 0 objects",
            ],
            "socat[12] E bind(5, {AF=1 /run/neo-egress/proxy.sock}, 28): Permission denied",
        ),
        # squid's own reason before the script's.
        (
            [
                "2026/12/03 00:01:33| FATAL: Bungled /tmp/squid.conf line 3: acl x y",
                "neo-egress: squid did not start",
            ],
            "FATAL: Bungled /tmp/squid.conf line 3: acl x y",
        ),
        (["neo-egress: squid did not start"], "squid did not start"),
        # Nothing but squid's routine lines: the last of them.
        (
            ["2026/12/03 00:01:33| Starting Squid", "2026/12/03 00:01:34| storeLateRelease"],
            "storeLateRelease",
        ),
        ([], ""),
    ],
)
def test_a_failure_names_its_cause(lines: list[str], detail: str) -> None:
    assert failure_detail(lines) == detail


def test_a_dead_runners_proxy_is_swept_though_a_new_runner_has_its_pid(
    docker_client: DockerClient, egress_image: str
) -> None:
    """A worker container restarted: the new worker has the dead one's host
    name and pid, not its start time."""
    api = docker_client.api
    ours = owner_labels()
    namespace, _, start = ours[LABEL_PROCESS].partition(":")
    earlier = {**ours, LABEL_PROCESS: f"{namespace}:{int(start) - 1}"}
    made: dict[str, str] = {}
    for name, owner in (("dead", earlier), ("live", ours)):
        labels = {
            LABEL_EGRESS: "1",
            LABEL_JOB: f"test-sweep-{name}",
            LABEL_STARTED: str(int(time.time())),
            LABEL: "proxy-sweep",
            **owner,
        }
        volume = api.create_volume(labels=labels)["Name"]
        made[name] = str(api.create_container(egress_image, labels=labels)["Id"])
        made[f"{name}-volume"] = str(volume)
    try:
        removed = sweep_egress(docker_client, max_age=24 * 3600)
        mine = {"label": f"{LABEL}=proxy-sweep"}
        left = {str(c["Id"]) for c in api.containers(all=True, filters=mine)}
        volumes = api.volumes(filters=mine).get("Volumes") or []
    finally:
        for name in ("dead", "live"):
            with contextlib.suppress(NotFound):
                api.remove_container(made[name], force=True)
            with contextlib.suppress(NotFound):
                api.remove_volume(made[f"{name}-volume"])

    # Another test's sweep on this engine may remove the dead runner's
    # leftovers first (they are orphans to every runner here): what counts
    # is that a sweep did, and that the live one's are still there.
    assert made["dead"] not in left, removed
    assert made["live"] in left
    assert {v["Name"] for v in volumes} == {made["live-volume"]}, removed
