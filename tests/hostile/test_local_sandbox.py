"""The local sandbox's isolation against hostile commands, through real `neo`
processes. scripts/test runs this file as root and again as an unprivileged
user (scripts/test-unprivileged): what a command may read of other processes
depends on who runs it.

Every case is a row of a table below:

- `LEFTOVERS`: a bash command (one tool call, or several) that leaves a
  process running past its own end and names it with `NAME_LAST` into the
  file `left`. The rows' calls are those of one `neo run`, in turn (the test
  keeps each row's `left` apart); each row's test asserts that its process
  has ended once `neo run` has exited.
- `REFUSALS`: a host on which the local sandbox cannot hide the host's
  processes, made by wrapping `neo run` in `argv` (`{bin}` is a directory
  holding git and bash only, `{proc}` an empty directory). `neo run --sandbox
  local` must exit 2 with one line naming `reason` and `--sandbox docker`,
  before any model call.
"""

# ruff: noqa: F811 (the fixtures imported from test_sandbox and test_e2e)

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bot.serving import SECRET, free_port, headers, serve_env
from tests.bot.test_e2e import (  # noqa: F401 (fixtures)
    REPO,
    anthropic,
    bash,
    delivery,
    git_server,
    github,
    origin,
    secrets_of,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, text
from tests.hostile.test_sandbox import (  # noqa: F401 (fixtures)
    NEO,
    WALK_PARENTS,
    fake,
    hostile_secrets,
    neo_run,
    secret_env,
    tree,
)
from tests.processes import NAME_LAST, Process, wait_gone

# --- nothing a command starts outlives the run


@dataclass(frozen=True)
class Leftover:
    id: str
    commands: tuple[dict[str, Any], ...]


def bash_calls(*commands: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("bash", command) for command in commands]


QUIET = "> /dev/null 2>&1 < /dev/null"
LEFTOVERS = [
    Leftover("setsid", ({"command": f"setsid sleep 3600 {QUIET} & {NAME_LAST} > left"},)),
    Leftover(
        "background-with-its-own-output", ({"command": f"sleep 3600 {QUIET} & {NAME_LAST} > left"},)
    ),
    Leftover(
        "setsid-double-fork",
        ({"command": f"(setsid sh -c 'sleep 3600 {QUIET} & {NAME_LAST} > left' &); sleep 1"},),
    ),
    Leftover(
        "setsid-in-a-background-command",
        (
            {
                "command": f"setsid sleep 3600 {QUIET} & {NAME_LAST} > left; sleep 3600",
                "run_in_background": True,
            },
            {"command": "sleep 1"},
        ),
    ),
]


# After a row's calls: its `left` (once written, its writer may be in the
# background) moved aside, named after the row.
KEEP_LEFT = "timeout 60 sh -c 'until [ -s left ]; do sleep 0.05; done' && mv left left-{id}"


@pytest.fixture(scope="module")
def leftovers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One `neo run` making every row's calls, in turn: its tree (a row's
    `left` is `left-<id>`) and its tool results, once it has exited."""
    held = hostile_secrets()
    tree = tmp_path_factory.mktemp("leftovers") / "repo"
    tree.mkdir()
    calls = []
    for case in LEFTOVERS:
        calls += bash_calls(*case.commands, {"command": KEEP_LEFT.format(id=case.id)})
    with FakeAnthropicAPI(api_key=held["ANTHROPIC_API_KEY"]) as fake:
        outputs, _ = neo_run(fake, tree, {**fake.env, **held}, "local", calls)
    return tree, outputs


@pytest.mark.parametrize("case", LEFTOVERS, ids=[case.id for case in LEFTOVERS])
def test_no_process_a_command_starts_outlives_neo_run(
    leftovers: tuple[Path, list[str]], case: Leftover
) -> None:
    tree, outputs = leftovers

    name = (tree / f"left-{case.id}").read_text()
    left = Process.named(name, ["sleep", "3600"])
    try:
        assert wait_gone(left), f"{case.id}: still running after neo run exited ({outputs})"
    finally:
        if left.alive():
            os.kill(left.pid, 9)


# --- a host that cannot hide its processes refuses the local sandbox


@dataclass(frozen=True)
class Refusal:
    id: str
    argv: tuple[str, ...]
    reason: str


# Nests user namespaces, each as a user other than root, as deep as the kernel
# allows (32), then runs its arguments where no further namespace can be made.
# Run as `sh -c DEEPEST DEEPEST ARGS...`: it is its own $0.
DEEPEST = """
if unshare --user true 2>/dev/null; then
    exec unshare --user --map-user=65534 --map-group=65534 -- sh -c "$0" "$0" "$@"
fi
exec "$@"
"""
REFUSALS = [
    Refusal("no-unshare", ("env", "PATH={bin}"), "util-linux's unshare is not on PATH"),
    Refusal(
        "proc-mounted-elsewhere",
        (
            "unshare",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            'mount --rbind /proc "$0" && exec "$@"',
            "{proc}",
        ),
        "the proc filesystem mounted at {proc} shows the host's processes",
    ),
    Refusal("no-user-namespace-left", ("sh", "-c", DEEPEST, DEEPEST), "unshare failed"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[case.id for case in REFUSALS])
def test_a_host_that_cannot_hide_its_processes_refuses_the_local_sandbox(
    fake: FakeAnthropicAPI, tree: Path, secret_env: dict[str, str], case: Refusal
) -> None:
    bin_dir, proc = tree.parent / "bin", tree.parent / "proc"
    bin_dir.mkdir()
    proc.mkdir()
    for program in ("git", "bash"):
        found = subprocess.run(
            ["sh", "-c", f"command -v {program}"], capture_output=True, text=True
        )
        (bin_dir / program).symlink_to(found.stdout.strip())
    wrapper = [arg.format(bin=bin_dir, proc=proc) for arg in case.argv]
    env = {**os.environ, **fake.env, **secret_env, "NEO_HOME": str(tree.parent / "neo-home")}

    done = subprocess.run(
        [*wrapper, str(NEO), "run", "--sandbox", "local", "--repo", str(tree), "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert case.reason.format(proc=proc) in lines[0]
    assert lines[0].endswith("; use --sandbox docker")
    assert all(value not in done.stderr for value in secret_env.values())
    assert fake.requests == [], "the model was called before the sandbox was refused"


# --- neo serve, started by a wrapper that holds its secrets


HUNT = (
    'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null; '
    + WALK_PARENTS
    + "; true"
)


@pytest.fixture
def wrapped_serve(
    tmp_path: Path, github: FakeGitHub, git_server: Any, anthropic: FakeAnthropicAPI
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`neo serve` with one worker and the local sandbox, started by a shell
    that stays its parent, holding the App's key and the webhook secret."""
    env = {
        **serve_env(github, tmp_path / "data"),
        **anthropic.env,
        "NEO_WORKERS": "1",
        "NEO_GITHUB_GIT_URL": git_server.base_url,
    }
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    # `; exit $?`: the shell waits for neo serve rather than becoming it.
    argv = ["sh", "-c", '"$@"; exit $?', "sh", str(NEO), "serve", "--port", str(port)]
    process = subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        # One client for every probe: each new one loads the CA bundle.
        with httpx.Client(timeout=1) as probe:
            for _ in range(600):
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if probe.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
        yield url, process
    finally:
        # The shell and neo serve: SIGTERM to the shell alone would orphan the server.
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        log.close()


def test_a_job_s_commands_cannot_read_what_started_neo_serve(
    wrapped_serve: tuple[str, subprocess.Popen[bytes]],
    github: FakeGitHub,
    anthropic: FakeAnthropicAPI,
) -> None:
    url, _ = wrapped_serve
    number = github.add_issue(REPO, "Look around", "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo look around", user="mona")
    anthropic.script(bash("t1", HUNT), Reply([text("Nothing to change.")]))

    payload = delivery(number, comment, "@neo look around")
    answer = httpx.post(
        f"{url}/api/github/webhooks",
        content=payload,
        headers=headers("issue_comment", payload),
        timeout=30,
    )
    assert answer.json()["decision"] == "queued", answer.text
    for _ in range(1200):
        if len(anthropic.requests) >= 2:
            break
        time.sleep(0.1)

    last = anthropic.requests[1].body["messages"][-1]["content"]
    result = next(block for block in last if block["type"] == "tool_result")
    output = "".join(part["text"] for part in result["content"])
    assert "exit code: 0" in output, output
    found = [name for name, value in secrets_of(github, anthropic).items() if value in output]
    assert found == [], f"{found} leaked: {output[-2000:]}"
    assert SECRET not in output
