"""`--from-history`: merged pull requests that changed tests become tasks (fake GitHub, git)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from bench.quality.cli import main
from bench.quality.history import git_url_for, task_id
from bench.quality.taskset import TASKS_DIR, load_task
from bot.github.app import GitHubApp
from tests.fakes import FakeGitHub
from tests.fakes.git_server import FakeGitServer

REPO = "octo/lib"
SOURCE = "py-paginate-exact-pages"  # a task of the set, as the history of a repository


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=A", "-c", "user.email=a@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def _origin(root: Path) -> tuple[str, str, str]:
    """A bare repository at root/octo/lib.git: main at the base, and two pull request heads:
    #1 the real fix with its tests, #2 a change without tests. Their shas."""
    work = root / "work"
    _git(
        "clone",
        "--quiet",
        "--branch",
        "main",
        str(TASKS_DIR / SOURCE / "repo.bundle"),
        str(work),
        cwd=root,
    )
    base = _git("rev-parse", "HEAD", cwd=work)
    for patch in ("fix.patch", "tests.patch"):
        _git("apply", str(TASKS_DIR / SOURCE / patch), cwd=work)
    _git("commit", "--quiet", "-am", "Fix the empty last page", cwd=work)
    fixed = _git("rev-parse", "HEAD", cwd=work)
    _git("checkout", "--quiet", "--detach", base, cwd=work)
    (work / "README.md").write_text("# pager\n")
    _git("add", "README.md", cwd=work)
    _git("commit", "--quiet", "-m", "Add a README", cwd=work)
    docs = _git("rev-parse", "HEAD", cwd=work)
    bare = root / "served" / "octo" / "lib.git"
    bare.parent.mkdir(parents=True)
    _git("init", "--quiet", "--bare", str(bare), cwd=root)
    _git(
        "push",
        "--quiet",
        str(bare),
        f"{base}:refs/heads/main",
        f"{fixed}:refs/pull/1/head",
        f"{docs}:refs/pull/2/head",
        cwd=work,
    )
    return base, fixed, docs


def test_merged_pull_requests_with_tests_become_tasks(
    tmp_path: Path,
    bench_image: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, fixed, docs = _origin(tmp_path)
    with FakeGitHub() as github:
        github.install(7, "octo", ["lib"])

        async def mint() -> str:
            async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as app:
                return (await app.installation_token(7, REPO)).token

        token = asyncio.run(mint())
        body = "With 20 items and 10 per page, page 2 says there is a next page."
        first = github.add_pull(REPO, "Fix the empty last page", body, head="pages")
        github.merge_pull(REPO, first, base_sha=base, head_sha=fixed, merge_sha=fixed)
        second = github.add_pull(REPO, "Add a README", "", head="docs")
        github.merge_pull(REPO, second, base_sha=base, head_sha=docs, merge_sha=docs)
        github.add_pull(REPO, "Still open", "", head="wip")  # not merged: not read
        with FakeGitServer(tmp_path / "served", token=token) as server:
            monkeypatch.setenv("GITHUB_TOKEN", token)
            monkeypatch.setenv("NEO_GITHUB_API_URL", github.base_url)
            monkeypatch.setenv("NEO_GITHUB_GIT_URL", server.base_url)
            out = tmp_path / "tasks"
            argv = ["--from-history", REPO, "--out", str(out), "--image", bench_image]
            assert main(argv) == 0
            # The token travelled in git's environment: every request carried it.
            assert server.requests
            assert all(request.authenticated for request in server.requests)
    printed, errors = capsys.readouterr()
    assert "skipped #2: the change touches no test file" in errors
    assert token not in printed + errors
    assert printed.splitlines()[-1] == f"1 tasks written to {out} from 2 merged pull requests"

    task = load_task(out / "lib-pr1")
    original = load_task(TASKS_DIR / SOURCE)
    assert (task.title, task.body) == ("Fix the empty last page", body)
    assert task.spec.fail_to_pass == original.spec.fail_to_pass
    assert task.spec.pass_to_pass == original.spec.pass_to_pass
    assert task.fix == original.fix
    provenance = task.spec.provenance
    assert (provenance.kind, provenance.fix_commit, provenance.base_commit) == (
        "history",
        fixed,
        base,
    )
    assert provenance.issue.endswith("/octo/lib/pull/1")
    # The bundle is one snapshot commit of the base's tree: no history to find the fix in.
    listed = _git("bundle", "list-heads", str(task.bundle), cwd=tmp_path)
    assert listed.endswith(" refs/heads/main")


def test_without_a_token_it_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    assert main(["--from-history", REPO, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "python -m bench.quality: GITHUB_TOKEN is not set (a token that can read octo/lib)\n"
    )


def test_names() -> None:
    assert git_url_for("https://api.github.com") == "https://github.com"
    assert git_url_for("https://ghe.example.com/api/v3") == "https://ghe.example.com"
    assert task_id("Octo/My Lib!", 12) == "my-lib-pr12"
