"""What the environment segment says of setup and the network: which setup ran and how it
ended, where its installs are, and which hosts the agent's commands may reach.

Pure: the run's facts in, lines of the segment out, the same for the whole
run (the segment is part of the cached prompt prefix).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Final, Literal

from runner.network import NetworkPolicy
from runner.sandbox.setup_plan import SetupOutcome, StepOutcome
from runner.text import one_line

__all__ = ["MAX_SETUP_SHOWN", "NetworkAccess", "access_of", "network_lines", "setup_lines"]

# Commands shown: enough to tell what is installed, without letting a long
# list crowd out the task.
MAX_SETUP_SHOWN: Final = 20
_MAX_COMMAND_CHARS: Final = 200
# A failed command's last lines, as the prompt shows them (the report has more).
_TAIL_SHOWN: Final = 10
_MAX_HOSTS_SHOWN: Final = 40

_METHODS = {
    "read": "GET, HEAD and OPTIONS requests only (HTTPS through CONNECT)",
    "all": "any method",
}


@dataclass(frozen=True, slots=True)
class NetworkAccess:
    """The hosts the agent's commands may reach through Neo's proxy, and how."""

    hosts: tuple[str, ...]
    methods: Literal["read", "all"] = "read"


def access_of(policy: NetworkPolicy) -> NetworkAccess:
    """What the prompt says of an egress policy: its hosts (none when it is off) and methods."""
    if policy.off:
        return NetworkAccess(())
    return NetworkAccess(tuple(str(host) for host in policy.hosts), policy.methods)


def network_lines(network: NetworkAccess | bool | None) -> list[str]:
    """The segment's network lines: none, open, or the allowed hosts and methods."""
    if network is None:
        return []
    if network is False or (isinstance(network, NetworkAccess) and not network.hosts):
        return [
            "Network: none. Your commands cannot reach the internet: no package"
            " installs, no downloads, no git fetch or push. Work with what is installed."
        ]
    if network is True:
        return ["Network: your commands can reach the network."]
    assert isinstance(network, NetworkAccess)
    hosts = list(network.hosts[:_MAX_HOSTS_SHOWN])
    more = len(network.hosts) - len(hosts)
    listed = ", ".join(hosts) + (f" and {more} more" if more else "")
    return [
        f"Network: your commands reach only these hosts, through Neo's proxy, with"
        f" {_METHODS[network.methods]}: {listed}. A request to anything else is blocked"
        " and listed in Neo's report with the command that made it; if your task needs"
        " such a host, say so in your summary rather than working around the block."
    ]


def setup_lines(setup: SetupOutcome) -> list[str]:
    """The segment's setup lines: what ran before the agent, how it ended, where installs are."""
    notes = [f"Setup note: {one_line(note)}" for note in setup.notes]
    if setup.mode == "off":
        return [
            "Setup: off (`setup: []` in .github/neo.yml, or `neo run --setup none`); only"
            " what the image has is installed.",
            *notes,
        ]
    if not setup.steps:
        return [
            "Setup: none ran (no dependency files were found); only what the image has is"
            " installed.",
            *notes,
        ]
    if setup.reused_from is not None:
        when = _when(setup.reused_from)
        head = (
            f"Setup: the environment was prepared by an earlier job ({when}) and reused;"
            " these commands ran then, at the repository's root:"
        )
    else:
        head = "Setup: these commands ran before you started, at the repository's root:"
    shown = setup.steps[:MAX_SETUP_SHOWN]
    lines = [head, *(_step(step) for step in shown)]
    if len(setup.steps) > len(shown):
        lines.append(f"- ... and {len(setup.steps) - len(shown)} more")
    for step in shown:
        if not step.ok and step.tail:
            tail = step.tail.splitlines()[-_TAIL_SHOWN:]
            lines.append(f"Last lines of `{_command(step)}`:")
            lines.extend(f"    {line}" for line in tail)
    if setup.failed:
        lines.append(
            "A failed setup command leaves its dependencies missing: install what you need"
            " yourself if the network allows it, or say in your summary what could not be run."
        )
    lines.append(_WHERE)
    return [*lines, *notes]


_WHERE = (
    "Installs live outside the working tree, so none of them reaches your change:"
    " python3, pip and pytest are those of the virtual environment /opt/neo-env/venv,"
    " and a Node project's packages are in /node_modules."
)


def _step(step: StepOutcome) -> str:
    took = _seconds(step.seconds)
    if step.ok:
        return f"- `{_command(step)}`: succeeded in {took}"
    return f"- `{_command(step)}`: FAILED ({step.ended}) after {took}"


def _command(step: StepOutcome) -> str:
    return one_line(step.command, _MAX_COMMAND_CHARS).replace("`", "'")


def _seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _when(moment: float) -> str:
    stamp = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M UTC")
