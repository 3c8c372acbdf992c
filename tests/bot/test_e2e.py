"""From `@neo` mention to draft pull request, through real processes and Docker.

A real `neo serve` (and `neo worker`) process, the fake GitHub with git over
smart HTTP, the fake Messages API, and the Docker sandbox with the
`neo-sandbox:local` image: nothing of Neo runs in the test's process.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound, NotFound

from bot.jobs import Job, JobState
from bot.queue import SqliteQueue
from runner.sandbox.docker import LABEL_JOB, LABEL_OWNER, LABEL_SANDBOX
from tests.bot.intake.test_serve import mention
from tests.bot.serving import (
    SECRET,
    AppGitServer,
    Server,
    headers,
    neo_serve,
    neo_worker,
    serve_env,
)
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    Reply,
    ScriptedReply,
    Stall,
    Usage,
    add_commit,
    git_env,
    make_repo,
    text,
    tool_use,
)

REPO = "octo/hello"
INSTALLATION = 7
IMAGE = "neo-sandbox:local"
# Not "main": the pull request's base must be what GitHub says the default is.
DEFAULT_BRANCH = "trunk"
# Every scripted reply reports this much, so the report's totals are known.
USAGE = Usage(input_tokens=1_000, output_tokens=50)
SUMMARY = "Added a line to README.md; check_readme.py passes."
# The repository's test: passes once the README says who edited it.
CHECK = b"""\
import pathlib, sys
sys.exit(0 if "Edited by Neo." in pathlib.Path("README.md").read_text() else 1)
"""
DONE = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@pytest.fixture(scope="module")
def engine() -> Iterator[DockerClient]:
    """The local Docker engine, with the sandbox image built."""
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as error:
        pytest.fail(f"the Docker engine is not reachable ({error}); run scripts/ensure-docker")
    try:
        client.images.get(IMAGE)
    except ImageNotFound:
        pytest.fail(f"{IMAGE} is missing; build it with scripts/build-images")
    yield client
    client.close()


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropicAPI]:
    # A key no other text could contain by chance, so finding it means a leak.
    with FakeAnthropicAPI(api_key=f"sk-ant-e2e-{secrets.token_hex(16)}") as fake:
        yield fake


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.install(INSTALLATION, "octo", ["hello"])
        fake.set_permission(REPO, "mona", "write")
        fake.set_default_branch(REPO, DEFAULT_BRANCH)
        yield fake


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=3, branch=DEFAULT_BRANCH)
    add_commit(repo, {"check_readme.py": CHECK}, message="Add a test", branch=DEFAULT_BRANCH)
    return repo


@pytest.fixture
def git_server(tmp_path: Path, origin: Path, github: FakeGitHub) -> Iterator[AppGitServer]:
    server = AppGitServer(tmp_path / "served", github)
    with server:
        yield server


@pytest.fixture
def env(
    tmp_path: Path, github: FakeGitHub, git_server: AppGitServer, anthropic: FakeAnthropicAPI
) -> dict[str, str]:
    """What `neo serve` and `neo worker` run with: the Docker sandbox, the fakes."""
    return {
        **serve_env(github, tmp_path / "data"),
        **anthropic.env,
        "NEO_SANDBOX": "docker",
        "NEO_SANDBOX_IMAGE": IMAGE,
        "NEO_GITHUB_GIT_URL": git_server.base_url,
    }


# --- helpers


def delivery(number: int, comment: int, body: str) -> bytes:
    """A real `issue_comment.created` payload, pointed at the fake's issue and comment."""
    payload = mention()
    payload["repository"].update(full_name=REPO, name="hello", default_branch=DEFAULT_BRANCH)
    payload["repository"]["owner"]["login"] = "octo"
    payload["installation"]["id"] = INSTALLATION
    payload["issue"]["number"] = number
    payload["issue"].pop("pull_request", None)
    payload["comment"].update(id=comment, body=body, author_association="COLLABORATOR")
    payload["comment"]["user"]["login"] = "mona"
    payload["sender"]["login"] = "mona"
    return json.dumps(payload).encode()


def post_mention(
    server: Server, number: int, comment: int, body: str, repo: str | None = None
) -> None:
    """A real `issue_comment.created` delivery for the issue (of `repo`, else the
    delivery's own repository), answered 202 and queued."""
    payload = delivery(number, comment, body)
    if repo is not None:
        fields = json.loads(payload)
        fields["repository"].update(full_name=repo, name=repo.split("/")[1])
        payload = json.dumps(fields).encode()
    answer = httpx.post(
        f"{server.url}/api/github/webhooks",
        content=payload,
        headers=headers("issue_comment", payload),
        timeout=30,
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["decision"] == "queued", answer.text


def edit_readme(call_id: str) -> Reply:
    edit = {"path": "README.md", "old_string": "# fixture\n", "new_string": EDITED}
    return Reply([tool_use(call_id, "edit_file", edit)], "tool_use", usage=USAGE)


EDITED = "# fixture\n\nEdited by Neo.\n"


def bash(call_id: str, command: str) -> Reply:
    return Reply([tool_use(call_id, "bash", {"command": command})], "tool_use", usage=USAGE)


def git(origin: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), *args],
        capture_output=True,
        env=git_env(),
        check=True,
        timeout=30,
    )
    return done.stdout.decode().strip()


def bot_comments(github: FakeGitHub, number: int) -> list[Mapping[str, Any]]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


def comment_posts(github: FakeGitHub, number: int) -> int:
    """How many comments Neo created on the thread (POSTs that succeeded)."""
    path = f"/repos/{REPO}/issues/{number}/comments"
    return sum(
        1
        for r in github.requests
        if r.method == "POST" and r.route == path and r.status == 201 and r.auth != "none"
    )


def sandboxes(engine: DockerClient, owner_pid: int) -> list[dict[str, Any]]:
    """Sandbox containers (stopped ones too) started by the runner process `owner_pid`."""
    owner = f"{socket.gethostname()}:{owner_pid}"
    listed = engine.api.containers(
        all=True, filters={"label": [f"{LABEL_SANDBOX}=1", f"{LABEL_OWNER}={owner}"]}
    )
    return list(listed)


def gone(engine: DockerClient, container: str) -> bool:
    try:
        engine.api.inspect_container(container)
    except NotFound:
        return True
    return False


async def wait_until(
    check: Callable[[], Awaitable[bool]], what: str, logs: Sequence[Path], timeout: float = 60
) -> None:
    """Poll `check` until true; fail with the processes' logs after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:g}s\n{shown_logs(logs)}")
        await asyncio.sleep(0.1)


def shown_logs(logs: Sequence[Path]) -> str:
    """The processes' logs, for a failure's message: what `internal error` refers to."""
    return "\n".join(f"--- {log.name}\n{log.read_text()}" for log in logs if log.exists())


async def only_job(queue: SqliteQueue) -> Job:
    jobs = await queue.list()
    assert len(jobs) == 1, jobs
    return jobs[0]


def secrets_of(github: FakeGitHub, anthropic: FakeAnthropicAPI) -> dict[str, str]:
    """Every credential in play, by name: none may reach the sandbox or GitHub's text."""
    assert anthropic.api_key is not None
    found = {"ANTHROPIC_API_KEY": anthropic.api_key, "webhook secret": SECRET}
    # A line from the middle of the App's private key.
    key_lines = github.private_key_pem.splitlines()
    found["private key"] = key_lines[len(key_lines) // 2]
    for n, issued in enumerate(github.tokens):
        found[f"installation token {n}"] = issued.token
    return found


def leaks(where: str, haystack: str, credentials: Mapping[str, str]) -> list[str]:
    return [f"{name} in {where}" for name, value in credentials.items() if value in haystack]


# --- the happy path


async def test_a_signed_mention_through_neo_serve_and_docker_becomes_a_draft_pr(
    tmp_path: Path,
    env: dict[str, str],
    github: FakeGitHub,
    origin: Path,
    git_server: AppGitServer,
    anthropic: FakeAnthropicAPI,
    engine: DockerClient,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
    instruction = "@neo add a line to the README"
    comment = github.add_comment(REPO, number, instruction, user="mona")
    serve_pid: list[int] = []
    # The sandbox as the model's last reply finds it: the job's container, running.
    seen: list[dict[str, Any]] = []

    def look_at_the_sandbox(request: dict[str, Any]) -> ScriptedReply:
        for summary in sandboxes(engine, serve_pid[0]):
            seen.append(engine.api.inspect_container(summary["Id"]))
        return Reply([text(SUMMARY)], usage=USAGE)

    anthropic.script(
        edit_readme("t1"),
        # What a command in the sandbox can see: its environment and the clone's config.
        bash("t2", "env; cat .git/config"),
        bash("t3", "python3 check_readme.py"),
        look_at_the_sandbox,
    )
    logs = [tmp_path / "serve.log"]

    with neo_serve({**env, "NEO_WORKERS": "1"}, logs[0]) as server:
        serve_pid.append(server.process.pid)
        post_mention(server, number, comment, instruction)
        async with SqliteQueue(tmp_path / "data" / "neo.db") as queue:

            async def finished() -> bool:
                return (await only_job(queue)).state in DONE

            await wait_until(finished, "the job finished", logs)
            job = await only_job(queue)

    assert job.state is JobState.SUCCEEDED, (job.result, shown_logs(logs))
    assert job.attempts == 1
    assert anthropic.pending == 0
    # The draft pull request: head, base, body.
    pulls = github.pulls(REPO)
    assert len(pulls) == 1, pulls
    pull = pulls[0]
    assert pull["draft"] is True
    assert pull["head"]["ref"] == f"neo/issue-{number}"
    assert pull["base"]["ref"] == DEFAULT_BRANCH
    assert f"Fixes #{number}" in pull["body"]
    assert SUMMARY in pull["body"]
    # One progress comment, created once, edited into the report.
    assert comment_posts(github, number) == 1
    mine = bot_comments(github, number)
    assert len(mine) == 1, mine
    edits = [
        r
        for r in github.requests
        if r.method == "PATCH" and r.route == f"/repos/{REPO}/issues/comments/{mine[0]['id']}"
    ]
    assert edits, "the progress comment was never edited"
    report = mine[0]["body"]
    assert "**Done**" in report
    assert pull["html_url"] in report
    assert SUMMARY in report
    assert "`python3 check_readme.py` → exit 0" in report
    assert "Tokens: 4,000 in · 200 out" in report
    assert "Cost: $" in report
    # 👀 on the trigger.
    reactions = github.reactions(REPO)
    assert [(r["subject"], r["subject_id"], r["content"]) for r in reactions] == [
        ("issue_comment", comment, "eyes")
    ]
    # The commit in the bare repository: by the bot, co-authored by the requester.
    branch = f"refs/heads/neo/issue-{number}"
    assert git(origin, "rev-list", "--count", f"{DEFAULT_BRANCH}..{branch}") == "1"
    author = git(origin, "log", "-1", "--format=%an <%ae>", branch)
    assert author == f"{github.bot_login} <{github.bot_login}@users.noreply.github.com>"
    trailer = git(origin, "log", "-1", "--format=%(trailers:key=Co-authored-by)", branch)
    assert trailer.startswith("Co-authored-by: mona <"), trailer
    assert trailer.endswith("+mona@users.noreply.github.com>"), trailer
    assert git(origin, "show", f"{branch}:README.md") == EDITED.strip()
    # The container ran the job and held no credential, nor did anything Neo wrote.
    assert len(seen) == 1, seen
    container_env = "\n".join(seen[0]["Config"]["Env"] or [])
    assert "HOME=/home/neo" in container_env
    assert seen[0]["Config"]["Labels"][LABEL_JOB] == f"job-{job.id}"
    env_output = json.dumps(anthropic.requests[2].body["messages"][-1])
    assert "HOME=/home/neo" in env_output  # what the agent ran, in its tool_result
    assert f"{git_server.base_url}/{REPO}.git" in env_output  # the clone's remote
    assert gone(engine, seen[0]["Id"])
    credentials = secrets_of(github, anthropic)
    assert any(name.startswith("installation token") for name in credentials)
    texts = {
        "the container's environment": container_env,
        "the environment of a command in the sandbox": env_output,
        "the comments": json.dumps(github.comments(REPO)),
        "the pull request": json.dumps(pulls),
        "the commit": git(origin, "log", "-1", "--format=%B", branch),
        "the model's requests": json.dumps([r.body for r in anthropic.requests]),
        "the service's log": logs[0].read_text(),
    }
    found = [leak for where, t in texts.items() for leak in leaks(where, t, credentials)]
    assert found == []


# --- kill -9 of a worker mid-job


async def test_a_worker_killed_mid_job_leaves_one_comment_one_pr_and_no_container(
    tmp_path: Path,
    env: dict[str, str],
    github: FakeGitHub,
    origin: Path,
    git_server: AppGitServer,
    anthropic: FakeAnthropicAPI,
    engine: DockerClient,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    instruction = "@neo add a line to the README"
    comment = github.add_comment(REPO, number, instruction, user="mona")
    anthropic.script(
        # The first attempt edits, then waits on its second model call until killed.
        edit_readme("a1"),
        Stall(seconds=300, reply=Reply([text("too late")], usage=USAGE)),
        # The retry.
        edit_readme("b1"),
        bash("b2", "python3 check_readme.py"),
        Reply([text(SUMMARY)], usage=USAGE),
    )
    serve_log, first_log, second_log = (
        tmp_path / "serve.log",
        tmp_path / "worker-1.log",
        tmp_path / "worker-2.log",
    )
    logs = [serve_log, first_log, second_log]
    db = tmp_path / "data" / "neo.db"

    # A dead worker's job goes back to the queue 2 s after its last heartbeat.
    env = {**env, "NEO_WORKER_LEASE": "2"}

    # The test makes the queue's database, so processes that start side by side
    # only open it.
    async with SqliteQueue(db) as queue:
        with (
            neo_worker(env, first_log, "--concurrency", "1", wait=False) as first,
            neo_serve({**env, "NEO_WORKERS": "0"}, serve_log) as server,
        ):
            first.wait_started()
            post_mention(server, number, comment, instruction)

            async def mid_run() -> bool:
                # The edit is done, the second model call hangs, the sandbox runs.
                running = [c for c in sandboxes(engine, first.pid) if c["State"] == "running"]
                return len(anthropic.requests) >= 2 and bool(running)

            await wait_until(mid_run, "the first worker got mid-job", logs)
            job = await only_job(queue)
            assert job.state is JobState.RUNNING
            assert job.worker == f"{socket.gethostname()}:{first.pid}"
            assert comment_posts(github, number) == 1
            assert github.pulls(REPO) == []
            [container] = sandboxes(engine, first.pid)

            first.kill()

            # Nothing of the dead worker cleaned up after it.
            assert not gone(engine, container["Id"])
            assert (await only_job(queue)).state is JobState.RUNNING
            with neo_worker(env, second_log, "--concurrency", "1", wait=False) as second:
                # The second worker finds the dead one's lease expired, and retries the job.
                second.wait_started()

                async def finished() -> bool:
                    return (await only_job(queue)).state in DONE

                await wait_until(finished, "the retried job finished", logs)
                job = await only_job(queue)
                assert job.worker is None
                retried_by = second.pid
    requeued = [
        json.loads(line)
        for line in second_log.read_text().splitlines()
        if '"requeued_expired"' in line
    ]
    assert [entry["jobs"] for entry in requeued] == [[job.id]]

    assert job.state is JobState.SUCCEEDED, (job.result, shown_logs(logs))
    assert job.attempts == 2
    assert anthropic.pending == 0
    # One progress comment across both attempts, turned into the report.
    assert comment_posts(github, number) == 1
    mine = bot_comments(github, number)
    assert len(mine) == 1, mine
    assert "**Done**" in mine[0]["body"]
    # One pull request, one commit on its branch.
    pulls = github.pulls(REPO)
    assert len(pulls) == 1, pulls
    assert pulls[0]["draft"] is True
    assert pulls[0]["head"]["ref"] == f"neo/issue-{number}"
    assert pulls[0]["html_url"] in mine[0]["body"]
    branch = f"refs/heads/neo/issue-{number}"
    assert git(origin, "rev-list", "--count", f"{DEFAULT_BRANCH}..{branch}") == "1"
    assert git(origin, "show", f"{branch}:README.md") == EDITED.strip()
    # The killed worker's container is gone, and so is the retry's.
    assert gone(engine, container["Id"])
    assert sandboxes(engine, retried_by) == []
    # The retry starts the job's conversation over: the dead attempt's edit
    # died with its working tree, so the model must not be told it was made.
    retry_messages = anthropic.requests[2].body["messages"]
    told = [b["id"] for m in retry_messages for b in m["content"] if b["type"] == "tool_use"]
    assert told == [], f"the retry's first model call replays the dead attempt's tool calls {told}"
    assert len(retry_messages) == 1
