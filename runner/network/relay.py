"""The sandbox's side of the egress: where the proxy's socket is, and how commands find it.

The exec server's relay (runner/sandbox/exec_server.py, `Relay`) listens on
127.0.0.1:RELAY_PORT inside the sandbox and forwards to SOCKET_PATH, the
socket of the job's egress proxy (`runner.network.proxy`), whose volume is
mounted at SOCKET_DIR.
"""

from __future__ import annotations

__all__ = ["RELAY_PORT", "SOCKET_DIR", "SOCKET_PATH", "proxy_environment"]

SOCKET_DIR = "/run/neo-egress"
SOCKET_PATH = f"{SOCKET_DIR}/proxy.sock"
# exec_server.RELAY_PORT: the script cannot import it.
RELAY_PORT = 3128
_LOCAL = "localhost,127.0.0.1,::1"


def proxy_environment() -> dict[str, str]:
    """What commands need to go out through the relay: the variables HTTP
    clients read (pip, uv, curl, git, go, cargo, bundler), and those npm,
    pnpm and yarn read instead. Java's tools read none of them."""
    url = f"http://127.0.0.1:{RELAY_PORT}"
    names = (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "CARGO_HTTP_PROXY",
    )
    return {**dict.fromkeys(names, url), "NO_PROXY": _LOCAL, "no_proxy": _LOCAL}
