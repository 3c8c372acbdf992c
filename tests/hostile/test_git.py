"""Hostile working trees: what the model can leave in the tree the host then commits.

The model controls the whole working tree in the sandbox, `.git/` included.
Each row below is one thing it can do there, as a shell command it runs with
the bash tool; the job then runs on the host as always (the real git CLI,
the fake smart-HTTP server, the local sandbox). Whatever the row does, the
job ends with one line, no host git runs a command of the tree's choosing,
and nothing is pushed as a gitlink to a commit no remote has.

To add a row: append a `Row` to `ROWS` with a readable id, the `command`
(`{marker}` is replaced by a host path outside the tree that must never be
created), and what the job must end with: `error`, a text the one-line error
contains (the job fails), or else `left_out`, the directories the commit
must leave out (the job commits `notes.txt`, which every row writes).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import runner.git.process
from runner.job import JobSpec, run
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitServer,
    Reply,
    git_env,
    make_repo,
    text,
    tool_use,
)
from tests.runner.test_job import job_spec

TOKEN = "ghs_HostileTreesTokenForTheTests00000000"
BRANCH = "neo/issue-10"
COMMIT = "git -c user.name=m -c user.email=m@example.com commit -q --allow-empty -m m"


@dataclass(frozen=True)
class Row:
    id: str
    command: str
    error: str | None = None
    left_out: tuple[str, ...] = ()


ROWS = [
    Row(
        "config-is-a-directory",
        "rm .git/config && mkdir .git/config",
        error="refusing a working tree whose .git/config is a directory",
    ),
    Row(
        "head-is-a-fifo",
        "rm .git/HEAD && mkfifo .git/HEAD",
        error="refusing a working tree whose .git/HEAD is a FIFO",
    ),
    Row(
        "head-links-to-etc-passwd",
        "ln -sf /etc/passwd .git/HEAD",
        error="refusing a working tree whose .git/HEAD is a symbolic link",
    ),
    Row(
        "info-exclude-is-a-fifo",
        "rm -f .git/info/exclude && mkfifo .git/info/exclude",
        error="refusing a working tree whose .git/info/exclude is a FIFO",
    ),
    Row(
        "gitignore-is-a-fifo",
        "mkdir -p docs && mkfifo docs/.gitignore",
        error="refusing a working tree whose docs/.gitignore is a FIFO",
    ),
    Row(
        "gitattributes-links-to-a-fifo",
        "mkfifo pipe && ln -s pipe .gitattributes",
        error="refusing a working tree whose .gitattributes is a FIFO",
    ),
    Row(
        "config-sets-core-fsmonitor",
        "printf '[core]\\n\\tfsmonitor = \"touch {marker}\"\\n' >> .git/config",
    ),
    Row(
        "config-sets-core-sshcommand-and-rewrites-the-url-to-ssh",
        'printf \'[core]\\n\\tsshCommand = "touch {marker}; false"\\n'
        '[url "ssh://git@localhost/"]\\n\\tinsteadOf = http://\\n\' >> .git/config',
    ),
    Row(
        "config-rewrites-the-url-to-ext",
        'printf \'[protocol "ext"]\\n\\tallow = always\\n'
        '[url "ext::sh -c touch% {marker}"]\\n\\tinsteadOf = http://\\n\' >> .git/config',
    ),
    Row(
        "config-includes-a-file-of-its-own",
        "printf '[core]\\n\\tfsmonitor = \"touch {marker}\"\\n' > .git/evil"
        " && printf '[include]\\n\\tpath = evil\\n' >> .git/config",
    ),
    Row(
        "hooks-for-every-step",
        "for hook in pre-commit prepare-commit-msg commit-msg post-commit pre-push"
        " reference-transaction post-checkout post-index-change; do"
        " printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/$hook"
        " && chmod +x .git/hooks/$hook; done",
    ),
    Row(
        "a-clean-filter-for-every-file",
        "echo '* filter=evil' > .gitattributes"
        ' && printf \'[filter "evil"]\\n\\tclean = "touch {marker}; cat"\\n\' >> .git/config',
    ),
    Row(
        "a-nested-repository-with-a-commit",
        f"git init -q sub && echo x > sub/x && git -C sub add x && (cd sub && {COMMIT})",
        left_out=("sub",),
    ),
    Row(
        "a-nested-repository-without-a-commit",
        "git init -q lib/empty && echo x > lib/empty/x",
        left_out=("lib/empty",),
    ),
    Row(
        "a-copy-of-the-git-directory-in-a-subfolder",
        "mkdir -p vendor && cp -r .git vendor/.git",
        left_out=("vendor",),
    ),
    Row(
        "a-gitdir-file-pointing-at-the-top-repository",
        "mkdir -p sub && echo 'gitdir: ../.git' > sub/.git && echo x > sub/x",
        left_out=("sub",),
    ),
    Row(
        "a-gitdir-file-pointing-at-a-repository-whose-head-is-a-fifo",
        "mkdir -p evil/objects evil/refs sub && mkfifo evil/HEAD"
        " && echo 'gitdir: ../evil' > sub/.git",
        left_out=("sub",),
    ),
    Row(
        "a-submodule-in-gitmodules-for-a-repository-it-made",
        "printf '[submodule \"lib\"]\\n\\tpath = lib\\n\\turl = https://example.com/lib.git\\n'"
        f" > .gitmodules && git init -q lib && (cd lib && {COMMIT})",
        left_out=("lib",),
    ),
]


@pytest.fixture(autouse=True)
def anthropic_env(fake_anthropic: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in fake_anthropic.env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=3)
    return repo


@pytest.fixture
def server(tmp_path: Path, origin: Path) -> Iterator[FakeGitServer]:
    with FakeGitServer(tmp_path / "served", token=TOKEN) as fake:
        yield fake


@pytest.fixture
def make_spec(server: FakeGitServer, tmp_path: Path) -> Callable[..., JobSpec]:
    def make(**changes: Any) -> JobSpec:
        values: dict[str, Any] = {
            "job_id": "job-1",
            "repo_url": server.url("octo/hello.git"),
            "token": TOKEN,
            "base_branch": "main",
            "work_branch": BRANCH,
            "prompt": "Write notes.txt.",
            "data_dir": tmp_path / "data",
            "model": "claude-test",
            "sandbox": "local",
            "time_limit": 60.0,
        }
        return job_spec(**(values | changes))

    return make


def pushed(origin: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), *args], capture_output=True, env=git_env(), check=False
    )
    return done.stdout.decode().strip() if done.returncode == 0 else ""


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
async def test_a_hostile_tree_ends_the_job_in_one_line_and_runs_nothing_on_the_host(
    row: Row,
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Short, so that a git process blocked on the tree fails the row with a
    # timeout message quickly instead of holding it for minutes.
    monkeypatch.setattr(runner.git.process, "LOCAL_TIMEOUT", 15.0)
    marker = tmp_path / "host-ran-it"
    command = row.command.replace("{marker}", str(marker))
    fake_anthropic.script(
        Reply(
            [
                tool_use("t1", "write_file", {"path": "notes.txt", "content": "notes\n"}),
                tool_use("t2", "bash", {"command": command}),
            ],
            "tool_use",
        ),
        Reply([text("Wrote notes.txt.")]),
    )

    result = await run(make_spec())

    assert not marker.exists()
    # Whatever was pushed holds no gitlink (mode 160000).
    assert " commit " not in pushed(origin, "ls-tree", "-r", BRANCH)
    if row.error is not None:
        assert result.conclusion == "failed", result
        assert result.error_kind == "git_error"
        assert result.error_message is not None
        assert "\n" not in result.error_message
        assert row.error in result.error_message
        assert pushed(origin, "rev-parse", "--verify", "--quiet", BRANCH) == ""
    else:
        assert result.conclusion == "changed", result
        assert result.left_out == row.left_out
        committed = pushed(origin, "diff", "--name-only", "main", BRANCH).splitlines()
        assert "notes.txt" in committed
        assert not [path for path in committed for d in row.left_out if path.startswith(d)]
