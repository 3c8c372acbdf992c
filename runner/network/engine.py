"""What egress proxies need of the Docker engine besides their containers: the
network they reach the outside from, and the removal of what a job or a
crash left (`runner.network.proxy` runs the containers)."""

from __future__ import annotations

import contextlib
import socket
import time

from docker import DockerClient
from docker.errors import APIError, DockerException, NotFound

from runner.network.host_addresses import gateways
from runner.sandbox.base import SandboxError
from runner.sandbox.owners import is_orphan, process_alive
from runner.sandbox.removal import remove_container

__all__ = [
    "EGRESS_NETWORK",
    "LABEL_EGRESS",
    "network_of",
    "remove_proxy",
    "remove_quietly",
    "sweep_egress",
]

# The network proxies reach the outside from, created on first use;
# containers on it cannot reach one another.
EGRESS_NETWORK = "neo-egress"
LABEL_EGRESS = "neo.egress"


def network_of(client: DockerClient, name: str) -> tuple[str, set[str]]:
    """The id of network `name`, Neo's own created when missing; and the
    host's addresses on every network of the engine (their gateways)."""
    every = client.api.networks()
    found = [n for n in every if n.get("Name") == name]
    if not found and name == EGRESS_NETWORK:
        with contextlib.suppress(APIError):
            client.api.create_network(
                name,
                driver="bridge",
                options={"com.docker.network.bridge.enable_icc": "false"},
                labels={LABEL_EGRESS: "1"},
                check_duplicate=True,
            )
        every = client.api.networks()
        found = [n for n in every if n.get("Name") == name]
    if not found:
        raise SandboxError(f"docker network {name} not found (the egress proxy's network)")
    # Two workers creating it at once may leave two: all agree on the oldest.
    first = min(found, key=lambda n: (n.get("Created", ""), n["Id"]))
    return str(first["Id"]), gateways(every)


def remove_quietly(client: DockerClient, name: str) -> None:
    with contextlib.suppress(DockerException, OSError):
        remove_proxy(client, name)


def remove_proxy(client: DockerClient, name: str) -> None:
    """Remove a proxy's container, then its volume (once no container uses it)."""
    api = client.api
    remove_container(client, name)
    with contextlib.suppress(NotFound):
        try:
            api.remove_volume(name)
        except APIError as error:
            if error.status_code != 409:  # still mounted: the sweep comes back for it
                raise


def sweep_egress(client: DockerClient, *, max_age: float) -> list[str]:
    """Remove proxies and their volumes left over from a crash (see `is_orphan`); their names."""
    host = socket.gethostname()
    now = time.time()
    removed: list[str] = []
    api = client.api

    def orphan(found: dict[str, str]) -> bool:
        return is_orphan(found, host=host, now=now, max_age=max_age, alive=process_alive)

    for summary in api.containers(all=True, filters={"label": f"{LABEL_EGRESS}=1"}):
        if orphan(summary.get("Labels") or {}):
            with contextlib.suppress(APIError):
                if remove_container(client, summary["Id"]):
                    removed.append(str(summary["Names"][0]).lstrip("/"))
    volumes = api.volumes(filters={"label": f"{LABEL_EGRESS}=1"}).get("Volumes") or []
    for volume in volumes:
        if orphan(volume.get("Labels") or {}):
            with contextlib.suppress(NotFound, APIError):
                api.remove_volume(volume["Name"])
                removed.append(str(volume["Name"]))
    return removed
