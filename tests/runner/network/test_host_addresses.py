"""The Docker host's own addresses: read from its tables, and from the engine."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from runner.network.host_addresses import (
    HostProbe,
    gateways,
    interface_addresses,
    outside_ranges,
)
from runner.network.proxy import LABEL_EGRESS
from tests.runner.network.conftest import LABEL

# A host with loopback, a bridge (172.17.0.1) and an interface outside the
# private ranges (192.0.2.2), as /proc/net/fib_trie shows it: the LOCAL /32
# leaves are its own; the network, broadcast and route leaves are not.
FIB_TRIE = """\
Main:
  +-- 0.0.0.0/0 3 0 4
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 172.17.0.0/16 2 0 2
        +-- 172.17.0.0/31 1 0 0
           |-- 172.17.0.0
              /16 link UNICAST
           |-- 172.17.0.1
              /32 host LOCAL
        |-- 172.17.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        |-- 192.0.2.2
           /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 4
     |-- 192.0.2.2
        /32 host LOCAL
"""
IF_INET6 = """\
00000000000000000000000000000001 01 80 10 80       lo
20010db8000000000000000000000002 02 40 00 80     eth0
fe800000000000000042acfffe110001 03 40 20 80  docker0
"""


def test_the_tables_give_the_hosts_own_addresses() -> None:
    found = interface_addresses(FIB_TRIE, IF_INET6)

    assert found == {
        "127.0.0.1",
        "172.17.0.1",
        "192.0.2.2",
        "::1",
        "2001:db8::2",
        "fe80::42:acff:fe11:1",
    }


def test_only_addresses_no_range_refuses_already_are_kept() -> None:
    found = interface_addresses(FIB_TRIE, IF_INET6)

    assert outside_ranges([*found, "not an address"]) == ["192.0.2.2", "2001:db8::2"]


def test_each_networks_gateway_is_the_hosts_even_when_docker_chose_it() -> None:
    networks: list[dict[str, Any]] = [
        {
            "Driver": "bridge",
            "IPAM": {"Config": [{"Subnet": "198.18.7.0/24", "Gateway": "198.18.7.1"}]},
        },
        # A subnet given without its gateway: Docker gives the bridge its first address.
        {"Driver": "bridge", "IPAM": {"Config": [{"Subnet": "198.19.4.0/24"}]}},
        {"Driver": "null", "IPAM": {"Config": []}},
        {"Driver": "host", "IPAM": None},
        {"Driver": "macvlan", "IPAM": {"Config": [{"Subnet": "203.0.113.0/24"}]}},
    ]

    assert gateways(networks) == {"198.18.7.1", "198.19.4.1"}


async def test_the_probe_reads_the_engines_host(
    docker_client: DockerClient, egress_image: str
) -> None:
    # The tests run on the engine's host: its addresses are this process's,
    # bar those other tests add or remove meanwhile: Docker's bridges, and the
    # link-local address of each container's veth. What the host held both
    # before and after the probe, it held while the probe read.
    before = gateways(docker_client.api.networks())
    here = _host_addresses()
    labels = {LABEL_EGRESS: "1", LABEL: f"probe-{secrets.token_hex(3)}"}

    found = await HostProbe().addresses(docker_client, egress_image, labels)

    here &= _host_addresses()
    bridges = before | gateways(docker_client.api.networks())
    assert "127.0.0.1" in found
    assert found >= here - bridges, (here - bridges) - found
    # It leaves nothing behind.
    left = docker_client.api.containers(all=True, filters={"label": f"{LABEL}={labels[LABEL]}"})
    assert left == []


async def test_the_addresses_are_read_once_per_process_and_engine(
    docker_client: DockerClient, egress_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    probe = HostProbe()

    # A probe that fails is logged, and leaves what was known: nothing yet.
    assert await probe.addresses(docker_client, "neo-test-absent:none", {}) == frozenset()
    assert "reading the docker host's addresses failed" in caplog.text
    # Within its time to live, no other probe runs.
    assert await probe.addresses(docker_client, egress_image, {}) == frozenset()
    assert await HostProbe(ttl=0).addresses(docker_client, egress_image, {}) != frozenset()


def _read(path: str) -> str:
    file = Path(path)
    return file.read_text() if file.exists() else ""


def _host_addresses() -> frozenset[str]:
    return frozenset(interface_addresses(_read("/proc/net/fib_trie"), _read("/proc/net/if_inet6")))
