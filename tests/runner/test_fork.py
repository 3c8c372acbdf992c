"""A job on a fork's pull request (runner/fork.py through runner.job): the real git CLI
against the fake smart-HTTP server, the anthropic SDK against the fake Messages API,
the local sandbox.

By default nothing of the fork reaches the base repository and the change is
proposed as a patch; `Fork.push` pushes the merge base plus the fork's changes
bar CI configuration; a head past its limits is never checked out.
"""

# The job tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.fork import PROPOSING, CheckoutLimits, Fork
from runner.job import JobSpec, run
from tests.fakes import FakeAnthropicAPI, Reply, git_env, make_pull_request, text, tool_use
from tests.runner.test_job import (  # noqa: F401 (fixtures)
    BOT,
    CI_YML,
    anthropic_env,
    branch_head,
    data_dir,
    git,
    make_spec,
    origin,
    server,
)

pytestmark = pytest.mark.usefixtures("anthropic_env")

EVIL = ".github/workflows/evil.yml"
FORK_FILES: dict[str, bytes | None] = {
    EVIL: b"on: push\njobs: {steal: {runs-on: ubuntu-latest, steps: [{run: env}]}}\n",
    CI_YML: b"on: push\njobs: {}\n",
    ".github/actions/setup/action.yml": b"runs: {using: composite, steps: []}\n",
    "typo.txt": b"teh cat\n",
}


def script_fix(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply([tool_use("t1", "bash", {"command": "sed -i s/teh/the/ typo.txt"})], "tool_use"),
        Reply([text("Fixed the typo in typo.txt.")]),
    )


def refs(origin: Path) -> str:
    return git(origin, "for-each-ref", "--format=%(refname) %(objectname)")


def first_message(fake: FakeAnthropicAPI) -> str:
    return json.dumps(fake.requests[0].body["messages"][0])


@pytest.mark.parametrize("fork", [Fork(), None], ids=["fork-given", "pull-request-alone"])
async def test_by_default_nothing_is_pushed_and_the_change_is_a_patch_on_the_forks_head(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    tmp_path: Path,
    fork: Fork | None,
) -> None:
    head = make_pull_request(origin, 7, FORK_FILES)
    script_fix(fake_anthropic)
    before = refs(origin)

    result = await run(make_spec(work_branch="neo/pr-7", pull_request=7, fork=fork))

    assert result.conclusion == "changed", result
    assert result.commit is None
    assert result.fork is not None
    assert result.fork.head == head
    assert result.fork.proposed
    assert not result.fork.pushed
    assert result.fork.patch_files == ("typo.txt",)
    assert result.fork.patch is not None
    assert result.fork.patch_chars == len(result.fork.patch)
    # Nothing of the fork's, nor of Neo's, reached the base repository.
    assert refs(origin) == before
    # The patch is the fix, on the fork's head.
    checkout = tmp_path / "applied"
    env = git_env()
    subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], env=env, check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", head], env=env, check=True)
    subprocess.run(
        ["git", "-C", str(checkout), "apply", "-"],
        input=result.fork.patch.encode(),
        env=env,
        check=True,
    )
    assert (checkout / "typo.txt").read_text() == "the cat\n"
    # The model worked on the fork's head and knew its change is a proposal.
    assert PROPOSING in first_message(fake_anthropic)
    assert result.diffstat is not None
    assert [f.path for f in result.diffstat.files] == ["typo.txt"]


async def test_with_push_the_branch_holds_the_forks_changes_bar_its_ci_configuration(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    main = git(origin, "rev-parse", "refs/heads/main")
    head = make_pull_request(origin, 7, FORK_FILES)
    script_fix(fake_anthropic)

    result = await run(
        make_spec(work_branch="neo/pr-7", pull_request=7, fork=Fork(head=head, push=True))
    )

    assert result.conclusion == "changed", result
    assert result.commit == branch_head(origin, "neo/pr-7")
    assert result.fork is not None
    assert result.fork.pushed
    assert result.fork.left_out == (".github/actions/setup/action.yml", CI_YML, EVIL)
    squash = git(origin, "rev-parse", f"{result.commit}^")
    # The merge base, then one commit of the fork's changes bar CI configuration.
    assert git(origin, "rev-parse", f"{squash}^") == main
    assert git(origin, "show", f"{squash}:typo.txt") == "teh cat"
    for path in (EVIL, ".github/actions/setup/action.yml"):
        assert git(origin, "cat-file", "-e", f"{squash}:{path}", check=False) == ""
        assert git(origin, "cat-file", "-e", f"{result.commit}:{path}", check=False) == ""
    assert git(origin, "show", f"{result.commit}:{CI_YML}") == "on: push"
    assert git(origin, "show", f"{result.commit}:typo.txt") == "the cat"
    message = git(origin, "log", "-1", "--format=%B", squash)
    assert message.startswith(f"Pull request #7's changes at {head[:12]}")
    assert EVIL in message
    assert git(origin, "log", "-1", "--format=%an <%ae>", squash) == f"{BOT[0]} <{BOT[1]}>"
    # Not a line of the fork's CI configuration in anything pushed.
    pushed = git(origin, "log", "--format=%H", f"{main}..{result.commit}").split()
    for commit in pushed:
        changed = git(origin, "diff-tree", "-r", "--name-only", "--no-commit-id", commit)
        assert ".github" not in changed, (commit, changed)


async def test_a_pushed_branch_of_a_fork_is_continued_as_it_is(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    head = make_pull_request(origin, 7, FORK_FILES)
    script_fix(fake_anthropic)
    first = await run(
        make_spec(work_branch="neo/pr-7", pull_request=7, fork=Fork(head=head, push=True))
    )
    assert first.commit is not None
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": "echo more >> typo.txt"})], "tool_use"),
        Reply([text("Added more.")]),
    )

    second = await run(
        make_spec(
            job_id="job-2", work_branch="neo/pr-7", pull_request=7, fork=Fork(head=head, push=True)
        )
    )

    assert second.conclusion == "changed", second
    assert git(origin, "rev-parse", f"{second.commit}^") == first.commit
    assert second.fork is None  # the fork's head was not read again


@pytest.mark.parametrize(
    ("files", "limits", "line"),
    [
        (
            {f"many/{i:03d}.txt": b"x\n" for i in range(60)},
            CheckoutLimits(files=50),
            "pull request #7's head adds or changes 60 files, more than the 50 Neo checks"
            " out from a fork: it was not checked out",
        ),
        (
            {"big.bin": b"\0" * (2 * 1024 * 1024)},
            CheckoutLimits(bytes=1024 * 1024),
            "pull request #7's head adds or changes 2.0 MiB of files, more than the 1.0 MiB"
            " Neo checks out from a fork: it was not checked out",
        ),
        (
            {"typo.txt": b"teh\n"},
            CheckoutLimits(seconds=1e-9),
            "fetching and checking out pull request #7's head took more than 1e-09 s, the"
            " most Neo gives a fork's: it was stopped",
        ),
    ],
    ids=["files", "bytes", "time"],
)
@pytest.mark.parametrize("review", [False, True], ids=["task", "review"])
async def test_a_forks_head_past_its_limits_is_not_worked_on_and_says_why_in_one_line(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
    files: dict[str, bytes | None],
    limits: CheckoutLimits,
    line: str,
    review: bool,
) -> None:
    make_pull_request(origin, 7, files)
    before = refs(origin)

    result = await run(
        make_spec(work_branch="neo/pr-7", pull_request=7, review=review, fork=Fork(limits=limits))
    )

    assert result.conclusion == "failed"
    assert result.error_kind == "fork_refused"
    assert result.error_message == line
    assert fake_anthropic.requests == []
    assert refs(origin) == before
    assert not (data_dir / "workspaces" / "job-1").exists()


async def test_a_head_that_moved_after_the_caller_read_it_is_not_worked_on(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    head = make_pull_request(origin, 7, FORK_FILES)
    read = "0123456789ab" * 3 + "0123"

    result = await run(make_spec(work_branch="neo/pr-7", pull_request=7, fork=Fork(head=read)))

    assert result.conclusion == "failed"
    assert result.error_message == (
        f"pull request #7's head moved from 0123456789ab to {head[:12]} after Neo read it:"
        " ask again once it is where you want it"
    )
    assert fake_anthropic.requests == []
