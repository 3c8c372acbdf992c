"""The fake git server's model of GitHub's rule for workflow files, with the real git CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakes import FakeGitServer, basic_auth, git_env, make_pull_request, make_repo
from tests.fakes.git_server import add_commit

TOKEN = "ghs_WorkflowRuleTokenForTheFakeGitServer00"
WORKFLOW = ".github/workflows/evil.yml"


def git(
    *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = git_env(
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="http.extraHeader",
        GIT_CONFIG_VALUE_0=f"Authorization: {basic_auth(TOKEN)}",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=60
    )


def push(served: Path, tmp: Path, workflows: bool, commit: str, branch: str) -> str | None:
    """Push `commit` of the served repository as `branch`; GitHub's refusal, or None."""
    tree = tmp / f"tree-{branch.replace('/', '-')}"
    with FakeGitServer(served.parent.parent, token=TOKEN, workflows=workflows) as server:
        url = server.url("octo/hello.git")
        git("clone", "--quiet", url, str(tree))
        git("fetch", "--quiet", "origin", "+refs/pull/*/head:refs/pull/*", cwd=tree)
        done = git("push", "origin", f"{commit}:refs/heads/{branch}", cwd=tree, check=False)
    if done.returncode == 0:
        return None
    return done.stderr


@pytest.fixture
def served(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=2)
    return repo


@pytest.mark.parametrize("workflows", [False, True])
def test_a_fork_head_adding_a_workflow_is_pushed_only_with_the_permission(
    served: Path, tmp_path: Path, workflows: bool
) -> None:
    head = make_pull_request(served, 3, {WORKFLOW: b"on: push\n", "typo.txt": b"teh\n"})

    refused = push(served, tmp_path, workflows, head, "neo/pr-3")

    if workflows:
        assert refused is None
    else:
        assert refused is not None
        assert (
            f"refusing to allow a GitHub App to create or update workflow `{WORKFLOW}`"
            " without `workflows` permission"
        ) in refused
    listed = subprocess.run(
        ["git", "--git-dir", str(served), "branch", "--list", "neo/pr-3"],
        capture_output=True,
        text=True,
        env=git_env(),
        check=True,
    )
    assert bool(listed.stdout.strip()) is workflows


def test_a_push_that_touches_no_workflow_needs_no_permission(served: Path, tmp_path: Path) -> None:
    head = make_pull_request(served, 4, {"typo.txt": b"the\n"})

    assert push(served, tmp_path, False, head, "neo/pr-4") is None


def test_a_workflow_already_on_a_branch_is_not_a_change(served: Path, tmp_path: Path) -> None:
    add_commit(served, {WORKFLOW: b"on: push\n"}, message="CI")
    head = make_pull_request(served, 5, {"typo.txt": b"the\n"})

    assert push(served, tmp_path, False, head, "neo/pr-5") is None
    removed = make_pull_request(served, 6, {WORKFLOW: None})
    assert push(served, tmp_path, False, removed, "neo/pr-6") is not None
