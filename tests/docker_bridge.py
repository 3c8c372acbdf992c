"""The host's address on Docker's default bridge, read the same way on a new engine.

Containers on the bridge reach a server of the host's at that address. An
engine started for the first time creates its docker0 bridge with only a
`Subnet` in the network's IPAM config, no `Gateway`; a warm engine has
both. The address the host actually holds is on the bridge's interface, so
that is read first; the IPAM fields are the fallback.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess

from docker import DockerClient

__all__ = ["bridge_gateway"]

_DEFAULT_BRIDGE = "docker0"


def bridge_gateway(client: DockerClient) -> str:
    """The IPv4 address the host has on Docker's default `bridge` network."""
    attrs = client.networks.get("bridge").attrs
    interface = (attrs.get("Options") or {}).get("com.docker.network.bridge.name", _DEFAULT_BRIDGE)
    address = _interface_address(interface)
    if address is not None:
        return address
    configs = [
        c for c in (attrs.get("IPAM") or {}).get("Config") or [] if ":" not in c.get("Subnet", ":")
    ]
    if not configs:
        raise RuntimeError(f"docker's bridge network has no IPv4 subnet: {attrs.get('IPAM')}")
    config = configs[0]
    if config.get("Gateway"):
        return str(config["Gateway"])
    # Docker gives the bridge the subnet's first address unless told otherwise.
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


def _interface_address(interface: str) -> str | None:
    """The first IPv4 address of `interface`, or None when it has none or `ip` fails."""
    try:
        shown = subprocess.run(
            ["ip", "-j", "-4", "addr", "show", "dev", interface],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        links = json.loads(shown.stdout or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    for link in links:
        for info in link.get("addr_info", []):
            if info.get("family") == "inet" and info.get("local"):
                return str(info["local"])
    return None
