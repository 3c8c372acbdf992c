"""squid.conf for one job's egress proxy, from its policies: pure text.

squid listens on two loopback ports inside the proxy's container, one per
phase: setup's (`SETUP_PORT`), then the agent's (`AGENT_PORT`); the proxy
container relays the sandbox's socket to one of them at a time (see
`runner.network.proxy`). Each port admits what its phase's policy allows,
and both refuse addresses in `NEVER_RANGES`, and those in `PRIVATE_RANGES`
and the Docker host's own (`runner.network.host_addresses`) unless an
operator's entry asked for the host.

Names are matched with `-n` (no reverse lookup of an address), and a name's
address is looked up only once the name is allowed: a request for a host
nobody allowed never reaches DNS, so it cannot carry data out in a lookup.
Clients reach squid through the relay, which states in a PROXY protocol
header which command opened the connection (`runner.network.accesses`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from runner.network.hosts import NEVER_RANGES, PLAIN_PORT, PRIVATE_RANGES, TLS_PORT, Host
from runner.network.policy import READ_METHODS, NetworkPolicy

__all__ = ["AGENT_PORT", "LOG_FIELDS", "SETUP_PORT", "squid_config"]

AGENT_PORT = 3128
SETUP_PORT = 3129
# What each access log line holds, in order (see `runner.network.accesses`).
LOG_FIELDS = ("time", "client", "method", "host", "port", "status", "code", "phase")

_BASE = f"""\
# Written by Neo for one job; see runner/network/squid.py.
http_port 127.0.0.1:{AGENT_PORT} require-proxy-header name=agent
http_port 127.0.0.1:{SETUP_PORT} require-proxy-header name=setup
acl relay src 127.0.0.1/32
proxy_protocol_access allow relay
proxy_protocol_access deny all

# A forwarder, not a cache, that says nothing about itself or its clients,
# and keeps nothing it would need only as a cache: no digest of its store,
# no per-client statistics, no icons (its pages are Neo's, text only).
cache deny all
cache_mem 0 MB
digest_generation off
client_db off
mime_table /dev/null
memory_pools_limit 16 MB
via off
forwarded_for delete
httpd_suppress_version_string on
visible_hostname neo-egress

# No files of its own: the container's root is read-only.
pid_filename none
netdb_filename none
coredump_dir /tmp
hosts_file none
pinger_enable off
icp_port 0
htcp_port 0
max_filedescriptors 4096
# Names are asked of the engine's resolver over UDP: a query lost or held on
# a busy host is asked again after a second, not squid's default five (which
# then doubles), before the command's own timeout runs out.
dns_retransmit_interval 1 seconds
# Read ahead of a slow client as a plain proxy would (squid's default, 16 KB,
# halves a download's throughput).
read_ahead_gap 4 MB
shutdown_lifetime 0 seconds
logfile_rotate 0
# English pages only, Neo's among them (ERR_NEO_*: the egress image writes them).
error_directory /usr/share/squid/errors/templates

# One line per request on stdout, which the runner parses; never shown raw.
logformat neo %ts.%03tu %>a %rm %>rd %>rP %Ss %>Hs %{{phase}}note
access_log stdio:/dev/stdout logformat=neo
cache_log /dev/stderr
cache_store_log none

acl agent_port myportname agent
acl setup_port myportname setup
note phase agent agent_port
note phase setup setup_port
acl CONNECT method CONNECT
acl read_method method {" ".join(READ_METHODS)}
# A request whose host is an address (v4, or v6 with its colons), not a name.
acl literal dstdom_regex -n -i ^[0-9.]+$ ^\\[?[0-9a-f.]*:[0-9a-f:.]*\\]?$
acl never_address dst {" ".join(NEVER_RANGES)}
acl private_address dst {" ".join(PRIVATE_RANGES)}
# Each refusing rule ends on one of these, which always match: squid answers
# a refusal with the deny_info page of the last ACL its rule checked.
acl refuse_host src all
acl refuse_method src all
acl refuse_address src all
deny_info ERR_NEO_HOST refuse_host
deny_info ERR_NEO_METHOD refuse_method
deny_info ERR_NEO_ADDRESS refuse_address
"""


def squid_config(
    agent: NetworkPolicy, setup: NetworkPolicy, host_addresses: Sequence[str] = ()
) -> str:
    """The whole squid.conf of a job whose agent has `agent` and setup `setup`,
    on a Docker host whose own addresses are `host_addresses`."""
    if agent.off or setup.off:
        raise ValueError("no proxy runs for a policy that is off")
    phases = [_phase("a", "agent_port", agent), _phase("s", "setup_port", setup)]
    trusted = [name for phase in phases for name in phase.trusted]
    lines = [_BASE]
    for phase in phases:
        lines.extend(phase.acls)
    if trusted:
        lines.append(f"acl trusted any-of {' '.join(trusted)}")
    if host_addresses:
        lines.append(f"acl host_address dst {' '.join(host_addresses)}")
    lines.append("")
    lines.append("# Each phase admits its policy's hosts, ports and methods ...")
    for phase in phases:
        lines.extend(phase.rules)
    lines.append("# ... and neither reaches these addresses, whatever a name resolves to.")
    lines.append("http_access deny never_address refuse_address")
    unless = " !trusted" if trusted else ""
    lines.append(f"http_access deny private_address{unless} refuse_address")
    if host_addresses:
        lines.append(f"http_access deny host_address{unless} refuse_address")
    lines.append("http_access allow agent_port")
    lines.append("http_access allow setup_port")
    lines.append("http_access deny all refuse_host")
    lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Phase:
    acls: list[str]
    rules: list[str]
    trusted: list[str]  # the ACLs of its hosts the operator listed


def _phase(prefix: str, port_acl: str, policy: NetworkPolicy) -> _Phase:
    """The ACLs and http_access rules of one phase."""
    acls: list[str] = []
    plain: list[str] = []
    tls: list[str] = []
    trusted: list[str] = []
    for number, host in enumerate(policy.hosts, start=1):
        name = f"{prefix}{number}"
        acls.extend(_host_acls(name, host))
        plain.append(f"{name}_plain")
        tls.append(f"{name}_tls")
        if host.trusted:
            trusted.append(f"{name}_host")
    if policy.anywhere:
        acls.append(f"acl {prefix}_anywhere_plain port {PLAIN_PORT} {TLS_PORT}")
        acls.append(f"acl {prefix}_anywhere_tls port {TLS_PORT}")
        plain.append(f"{prefix}_anywhere_plain")
        tls.append(f"{prefix}_anywhere_tls")
    rules: list[str] = []
    if plain:
        acls.append(f"acl {prefix}_plain any-of {' '.join(plain)}")
        acls.append(f"acl {prefix}_tls any-of {' '.join(tls)}")
        rules.append(f"http_access deny {port_acl} CONNECT !{prefix}_tls refuse_host")
        rules.append(f"http_access deny {port_acl} !CONNECT !{prefix}_plain refuse_host")
    else:
        rules.append(f"http_access deny {port_acl} refuse_host")
    if policy.methods == "read":
        rules.append(f"http_access deny {port_acl} !CONNECT !read_method refuse_method")
    return _Phase(acls, rules, trusted)


def _host_acls(name: str, host: Host) -> Iterator[str]:
    """`<name>_host` matches the host, `<name>_plain` and `<name>_tls` it on its ports."""
    if host.kind == "name":
        yield f"acl {name}_match dstdomain -n {host.value}"
    elif host.kind == "wildcard":
        yield f"acl {name}_match dstdom_regex -n -i \\.{re.escape(host.value)}$"
    else:
        # Only a request for the address itself: `dst` would resolve a name.
        yield f"acl {name}_address dst {host.value}"
    matched = f"literal {name}_address" if host.kind == "address" else f"{name}_match"
    yield f"acl {name}_host all-of {matched}"
    if host.port is None:
        yield f"acl {name}_ports port {PLAIN_PORT} {TLS_PORT}"
        yield f"acl {name}_tls_port port {TLS_PORT}"
    else:
        yield f"acl {name}_ports port {host.port}"
        yield f"acl {name}_tls_port port {host.port}"
    yield f"acl {name}_plain all-of {name}_host {name}_ports"
    yield f"acl {name}_tls all-of {name}_host {name}_tls_port"
