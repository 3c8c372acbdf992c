"""The egress proxy container's program, and what its stderr says: pure text.

The program is a POSIX shell script (the container has no Neo code). Its
stdin: the size of squid.conf and the first phase (`setup` or `agent`) on a
line, squid.conf, then one line per phase change; its end stops everything.
It says `neo-egress: <word>` on stderr when a step is done (`READY`,
`AGENT`), and stops, saying why, when one cannot be: the runner then fails
at once instead of waiting out its time limit. squid's cache log and
socat's errors share that stderr; `failure_detail` picks the line that says
what went wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runner.network.relay import SOCKET_PATH
from runner.network.squid import AGENT_PORT, SETUP_PORT

__all__ = ["AGENT", "PREFIX", "READY", "SCRIPT", "failure_detail"]

PREFIX = "neo-egress: "
READY, AGENT = "ready", "agent"

SCRIPT = f"""\
set -u
sock={SOCKET_PATH}
read -r size first || exit 1
head -c "$size" > /tmp/squid.conf
squid -N -f /tmp/squid.conf &
squid=$!
listening() {{ grep -q ":$1 00000000:0000 0A" /proc/net/tcp; }}
until listening {AGENT_PORT:04X} && listening {SETUP_PORT:04X}; do
    kill -0 "$squid" 2>/dev/null || {{ echo "{PREFIX}squid did not start" >&2; exit 1; }}
    sleep 0.05
done
relay=
relay_to() {{
    if [ -n "$relay" ]; then
        kill -s KILL -- "-$relay" 2>/dev/null
        wait "$relay" 2>/dev/null
        rm -f "$sock"
    fi
    setsid socat -b 262144 UNIX-LISTEN:"$sock",fork,unlink-early,mode=0666,backlog=128 \\
        TCP:127.0.0.1:"$1",nodelay &
    relay=$!
    until [ -S "$sock" ]; do
        kill -0 "$relay" 2>/dev/null || {{ echo "{PREFIX}the relay did not start" >&2; exit 1; }}
        sleep 0.02
    done
}}
case "$first" in
    {AGENT}) relay_to {AGENT_PORT} ;;
    *) relay_to {SETUP_PORT} ;;
esac
echo "{PREFIX}{READY}" >&2
while read -r line; do
    case "$line" in
        {AGENT}) relay_to {AGENT_PORT}; echo "{PREFIX}{AGENT}" >&2 ;;
    esac
done
kill -s KILL -- "-$relay" 2>/dev/null
kill -s TERM "$squid"
wait "$squid"
"""

# squid's cache log: "2026/12/03 00:01:34| message"; socat: "2026/12/03
# 00:01:34 socat[12] E message" (E and F: errors, fatal ones).
_SQUID = re.compile(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?\| ?(.*)")
_SOCAT = re.compile(r"(?:\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )?(socat\[\d+\] [EF] .*)")


def failure_detail(lines: Sequence[str]) -> str:
    """What stopped the proxy, from its stderr: squid's or socat's error if
    either said one, else the script's own word, else the last line ("": none)."""
    errors: list[str] = []
    said: list[str] = []
    last = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        squid, socat = _SQUID.fullmatch(line), _SOCAT.fullmatch(line)
        if squid is not None:
            last = squid.group(1)
            if last.startswith("FATAL"):
                errors.append(last)
        elif socat is not None:
            last = socat.group(1)
            errors.append(last)
        else:
            last = line.removeprefix(PREFIX)
            if line.startswith(PREFIX):
                said.append(last)
    return (errors or said or [last])[-1]
