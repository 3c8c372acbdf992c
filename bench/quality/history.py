"""`--from-history OWNER/REPO`: tasks from a repository's own merged pull requests.

A team measures Neo on its own code before it trusts it: each merged pull
request that changed tests becomes a task, its title and description the
issue, the test half of its diff the hidden tests, the rest the fix (see
`authoring`). Pull requests whose tests fail on the base and pass with the
change make tasks; the others are skipped with the reason. GitHub is read
through bot/github with `GITHUB_TOKEN`; the repository is cloned on the host
with the token in git's environment, never its arguments.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import sys
import tempfile
from pathlib import Path

import httpx

from bench.quality.authoring import AuthoringError, Draft, build_task
from bench.quality.gitops import BenchGitError, git
from bench.quality.taskset import Provenance, Task, TaskError
from bot.github.errors import GitHubError
from bot.github.history import MergedPull, merged_pulls
from runner.sandbox.base import SandboxError
from runner.text import one_line

__all__ = ["from_history_command", "git_url_for", "task_id"]

_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def git_url_for(api_url: str) -> str:
    """The web host that goes with a REST API URL: github.com, or a GHES host."""
    url = httpx.URL(api_url)
    if url.host == "api.github.com":
        return "https://github.com"
    return str(url.copy_with(path="/")).rstrip("/")


def task_id(repository: str, number: int) -> str:
    """`owner/Repo` #12 -> "repo-pr12": a task id (lower case, digits, '.', '_', '-')."""
    name = re.sub(r"[^a-z0-9._-]+", "-", repository.split("/", 1)[1].lower()).strip("-._")
    return f"{name[:50] or 'repo'}-pr{number}"


async def from_history_command(args: argparse.Namespace) -> int:
    repository = args.from_history
    if not _REPOSITORY.fullmatch(repository):
        raise TaskError(f"--from-history takes OWNER/REPO, not {repository!r}")
    if args.out is None:
        raise TaskError("--from-history needs --out DIR, where the tasks are written")
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    if not token:
        raise TaskError(f"GITHUB_TOKEN is not set (a token that can read {repository})")
    api_url = os.environ.get("NEO_GITHUB_API_URL") or "https://api.github.com"
    git_url = os.environ.get("NEO_GITHUB_GIT_URL") or git_url_for(api_url)
    try:
        pulls = await merged_pulls(repository, token=token, api_url=api_url, limit=args.limit)
    except GitHubError as error:
        print(f"python -m bench.quality: {one_line(error)}", file=sys.stderr)
        return 1
    url = f"{git_url.rstrip('/')}/{repository}.git"
    built = 0
    with tempfile.TemporaryDirectory(prefix="neo-history-") as scratch:
        clone = Path(scratch) / "repo"
        await _clone(url, clone, token, pulls)
        for pull in pulls:
            try:
                task = await _task(repository, url, clone, pull, args)
            except (AuthoringError, BenchGitError, SandboxError) as error:
                print(f"skipped #{pull.number}: {one_line(error)}", file=sys.stderr)
                continue
            built += 1
            tests = f"{len(task.spec.fail_to_pass)}+{len(task.spec.pass_to_pass)} tests"
            print(f"{task.id}: #{pull.number} {pull.title} ({task.language}, {tests})")
    print(f"{built} tasks written to {args.out} from {len(pulls)} merged pull requests")
    return 0


async def _clone(url: str, clone: Path, token: str, pulls: list[MergedPull]) -> None:
    """`url` cloned bare at `clone`, with each pull request's head fetched."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    # In git's environment, where neither `ps` nor an error message shows it.
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }
    await git("clone", "--quiet", "--bare", url, str(clone), cwd=clone.parent, env=env)
    if pulls:
        refspecs = [f"+refs/pull/{p.number}/head:refs/neo/pull/{p.number}" for p in pulls]
        await git("fetch", "--quiet", url, *refspecs, cwd=clone, env=env)


async def _task(
    repository: str, url: str, clone: Path, pull: MergedPull, args: argparse.Namespace
) -> Task:
    base = (await git("merge-base", pull.base_sha, pull.head_sha, cwd=clone)).decode().strip()
    draft = Draft(
        id=task_id(repository, pull.number),
        title=pull.title,
        body=pull.body or pull.title,
        license=f"that of {repository}",
        provenance=Provenance(
            kind="history",
            repository=url,
            issue=pull.url,
            fix_commit=pull.head_sha,
            base_commit=base,
        ),
    )
    return await build_task(clone, base, pull.head_sha, draft, dest=args.out, image=args.image)
