"""The environment segment's setup and network lines."""

from __future__ import annotations

import pytest

from runner.context.setup_facts import MAX_SETUP_SHOWN, NetworkAccess, network_lines, setup_lines
from runner.sandbox.setup_plan import SetupOutcome, StepOutcome

UV = StepOutcome("uv pip install -r requirements.txt", "python", 12.4, 0)
NPM = StepOutcome("npm ci", "node", 3.2, 1, tail="\n".join(f"npm ERR! line {n}" for n in range(15)))
WHERE = (
    "Installs live outside the working tree, so none of them reaches your change:"
    " python3, pip and pytest are those of the virtual environment /opt/neo-env/venv,"
    " and a Node project's packages are in /node_modules."
)


def test_setup_that_ran_says_each_command_how_it_ended_and_how_long_it_took() -> None:
    lines = setup_lines(SetupOutcome("auto", (UV, NPM), notes=("yarn.lock is larger than 64 MiB",)))

    assert lines == [
        "Setup: these commands ran before you started, at the repository's root:",
        "- `uv pip install -r requirements.txt`: succeeded in 12s",
        "- `npm ci`: FAILED (exit code 1) after 3s",
        "Last lines of `npm ci`:",
        *(f"    npm ERR! line {n}" for n in range(5, 15)),
        "A failed setup command leaves its dependencies missing: install what you need"
        " yourself if the network allows it, or say in your summary what could not be run.",
        WHERE,
        "Setup note: yarn.lock is larger than 64 MiB",
    ]


def test_a_reused_environment_says_when_it_was_prepared() -> None:
    lines = setup_lines(SetupOutcome("auto", (UV,), reused_from=1_800_000_000.0))

    assert lines[0] == (
        "Setup: the environment was prepared by an earlier job (2027-01-15 08:00 UTC) and"
        " reused; these commands ran then, at the repository's root:"
    )
    assert lines[1:] == ["- `uv pip install -r requirements.txt`: succeeded in 12s", WHERE]


@pytest.mark.parametrize(
    ("outcome", "first"),
    [
        (SetupOutcome("off"), "Setup: off (`setup: []` in .github/neo.yml, or"),
        (SetupOutcome("auto"), "Setup: none ran (no dependency files were found);"),
    ],
)
def test_no_setup_says_why(outcome: SetupOutcome, first: str) -> None:
    assert setup_lines(outcome)[0].startswith(first)


def test_a_long_list_is_cut_and_a_command_never_breaks_the_markup() -> None:
    steps = tuple(StepOutcome(f"make `step-{n}`\nnext", None, 0.25, 0) for n in range(25))
    lines = setup_lines(SetupOutcome("explicit", steps))

    assert lines[1] == "- `make 'step-0' next`: succeeded in 0.2s"
    assert lines[MAX_SETUP_SHOWN + 1] == "- ... and 5 more"


def test_the_network_lines_name_the_hosts_and_methods_and_where_a_block_shows() -> None:
    (line,) = network_lines(NetworkAccess(("pypi.org", "files.pythonhosted.org"), "read"))
    assert line.startswith(
        "Network: your commands reach only these hosts, through Neo's proxy, with GET, HEAD and"
        " OPTIONS requests only (HTTPS through CONNECT): pypi.org, files.pythonhosted.org."
    )
    assert "listed in Neo's report with the command that made it" in line
    (anything,) = network_lines(NetworkAccess(("example.com",), "all"))
    assert "with any method: example.com." in anything


@pytest.mark.parametrize("network", [False, NetworkAccess(())])
def test_no_network_says_so(network: NetworkAccess | bool) -> None:
    (line,) = network_lines(network)
    assert line.startswith("Network: none.")


def test_an_unknown_network_says_nothing_and_an_open_one_says_it() -> None:
    assert network_lines(None) == []
    assert network_lines(True) == ["Network: your commands can reach the network."]
