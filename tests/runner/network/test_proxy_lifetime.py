"""The egress proxy's life: it comes up whatever the sandbox's image holds, and says
why when it cannot.

The proxy's socket lives on a volume both containers mount. Docker copies an
image's files, owner and mode at a mount point into an empty named volume
("copy-up"); the proxy's own image gives the directory to squid's user, and
no sandbox image may change it. A prepared environment, committed from a
container that had the volume mounted, holds a root-owned /run/neo-egress: a
warm job's sandbox started before the socket was made took the volume from
squid's user, and the proxy never became ready.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from runner.network import plan, policy_of
from runner.network.program import failure_detail
from runner.network.proxy import EgressProxy
from runner.network.relay import SOCKET_DIR
from runner.sandbox.docker import Limits, host_config
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
