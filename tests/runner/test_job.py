"""runner.job end to end: the real git CLI against a smart-HTTP server, the anthropic SDK
against the fake Messages API, and the local sandbox (one test: the docker sandbox)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker import DockerClient
from docker.errors import DockerException, ImageNotFound

from runner.agent import Event, ToolNotice, ToolStarted
from runner.assembly import RunSettings
from runner.git import MirrorCache
from runner.job import JOB_SETTINGS, JobResult, JobSpec, run, session_id_for
from runner.llm.registry import make_provider
from runner.llm.types import Message, Text, ToolResult, ToolUse
from runner.mcp.run import NO_MCP
from runner.sandbox.prepared import prune
from runner.sandbox.preparing import orphaned
from runner.sandbox.requests import Bounds
from runner.session import JobMark, Session, SessionStore, before_job
from runner.skills import SkillsInvoked
from tests.fakes import (
    ErrorReply,
    FakeAnthropicAPI,
    FakeGitServer,
    Reply,
    Stall,
    add_commit,
    git_env,
    make_repo,
    text,
    tool_use,
)
from tests.fakes.anthropic_api import Usage as WireUsage

TOKEN = "ghs_S3cretJobTokenForTheTests0123456789ab"
OTHER = "ghs_TheServerNowWantsThisOne000000000000"
LEAKS = (
    TOKEN.encode(),
    base64.b64encode(f"x-access-token:{TOKEN}".encode()),
    base64.b64encode(TOKEN.encode()),
)
BOT = ("neo[bot]", "neo-bot@users.noreply.github.com")
REQUESTER = ("Mona Lisa", "mona@example.com")
BRANCH = "neo/issue-12"
CI_YML = ".github/workflows/ci.yml"

pytestmark = pytest.mark.usefixtures("anthropic_env")


@pytest.fixture
def anthropic_env(fake_anthropic: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in fake_anthropic.env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=3)
    add_commit(repo, {CI_YML: b"on: push\n"}, message="Add CI")
    return repo


@pytest.fixture
def server(tmp_path: Path, origin: Path) -> Iterator[FakeGitServer]:
    with FakeGitServer(tmp_path / "served", token=TOKEN) as fake:
        yield fake


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


_RUN_FIELDS = {field.name for field in dataclasses.fields(RunSettings)}


def job_spec(**values: Any) -> JobSpec:
    """A JobSpec from flat values: those of the run's settings go into `settings`."""
    chosen = {name: value for name, value in values.items() if name in _RUN_FIELDS}
    rest = {name: value for name, value in values.items() if name not in _RUN_FIELDS}
    return JobSpec(**rest, settings=dataclasses.replace(JOB_SETTINGS, **chosen))


@pytest.fixture
def make_spec(server: FakeGitServer, data_dir: Path) -> Callable[..., JobSpec]:
    def make(**changes: Any) -> JobSpec:
        values: dict[str, Any] = {
            "job_id": "job-1",
            "repo_url": server.url("octo/hello.git"),
            "token": TOKEN,
            "base_branch": "main",
            "work_branch": BRANCH,
            "prompt": "Add a line to README.md and check it.",
            "data_dir": data_dir,
            "model": "claude-test",
            "sandbox": "local",
            "co_author": REQUESTER,
            "bot_name": BOT[0],
            "bot_email": BOT[1],
            "session_key": "octo/hello#12",
            "time_limit": 60.0,
        }
        values.update(changes)
        return job_spec(**values)

    return make


def git(origin: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), *args], capture_output=True, env=git_env(), check=False
    )
    if check:
        assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().strip() if done.returncode == 0 else ""


def branch_head(origin: Path, branch: str = BRANCH) -> str:
    return git(origin, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)


def workspace_leaks(root: Path) -> list[Path]:
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            readable = path.is_file() and not path.is_symlink()
            if readable and any(leak in path.read_bytes() for leak in LEAKS):
                found.append(path)
    return found


def assert_no_token_sent(fake: FakeAnthropicAPI) -> None:
    assert fake.requests
    for request in fake.requests:
        assert all(leak not in request.raw_body for leak in LEAKS)
        assert all(TOKEN not in value for value in request.headers.values())


def edit_and_check(fake: FakeAnthropicAPI, workspace: Path, seen: list[Path]) -> None:
    """Script: edit README.md, run a command (the workspace is scanned then), answer."""

    def scan_then_run(body: dict[str, Any]) -> Reply:
        seen.extend(workspace_leaks(workspace))
        seen.append(workspace)  # proves the scan ran while the workspace existed
        return Reply([tool_use("t2", "bash", {"command": "grep -c Neo README.md"})], "tool_use")

    fake.script(
        Reply(
            [
                tool_use(
                    "t1",
                    "edit_file",
                    {
                        "path": "README.md",
                        "old_string": "# fixture\n",
                        "new_string": "# fixture\n\nEdited by Neo.\n",
                    },
                )
            ],
            "tool_use",
        ),
        scan_then_run,
        Reply([text("Added a line to README.md; grep finds it once.")]),
    )


def conversation(fake: FakeAnthropicAPI, index: int) -> list[Any]:
    """The messages of request `index`, without the cache breakpoints, which move."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return [plain(message) for message in fake.requests[index].body["messages"]]


def tool_use_ids(messages: list[Any]) -> list[str]:
    return [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]


def assert_changed(result: JobResult, origin: Path, *, incomplete: bool = False) -> str:
    assert result.conclusion == "changed", result
    assert result.incomplete is incomplete
    assert result.commit is not None
    assert branch_head(origin) == result.commit
    return result.commit


# --- the happy path


async def test_a_change_is_committed_as_the_bot_and_pushed(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    seen: list[Path] = []
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", seen)
    events: list[Event] = []

    result = await run(make_spec(), on_event=events.append)

    commit = assert_changed(result, origin)
    assert git(origin, "log", "-1", "--format=%an <%ae>|%cn <%ce>", commit) == (
        f"{BOT[0]} <{BOT[1]}>|{BOT[0]} <{BOT[1]}>"
    )
    trailers = git(origin, "log", "-1", "--format=%(trailers:key=Co-authored-by)", commit)
    assert trailers == f"Co-authored-by: {REQUESTER[0]} <{REQUESTER[1]}>"
    assert git(origin, "rev-parse", f"{commit}^") == git(origin, "rev-parse", "main")
    assert git(origin, "show", f"{commit}:README.md") == "# fixture\n\nEdited by Neo."
    assert result.branch == BRANCH
    assert result.summary == "Added a line to README.md; grep finds it once."
    assert result.diffstat is not None
    assert [(f.path, f.insertions, f.deletions) for f in result.diffstat.files] == [
        ("README.md", 2, 0)
    ]
    assert result.blocked_paths == ()
    assert result.num_turns == 3
    assert result.usage.input_tokens > 0
    assert result.session_id == session_id_for("octo/hello#12")
    # The bash call ran in the tree and its exit code came back.
    tool_result = fake_anthropic.requests[2].body["messages"][-1]["content"][0]
    assert "exit code: 0" in json.dumps(tool_result)
    assert any(isinstance(event, ToolStarted) and event.name == "bash" for event in events)
    # The token was in no file of the tree while the agent ran, nor sent to the model.
    assert seen == [data_dir / "workspaces" / "job-1"]
    assert_no_token_sent(fake_anthropic)
    assert not (data_dir / "workspaces" / "job-1").exists()


async def test_no_change_pushes_nothing(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    server: FakeGitServer,
    origin: Path,
    data_dir: Path,
) -> None:
    fake_anthropic.script(Reply([text("Nothing to do: README.md already says it.")]))

    result = await run(make_spec())

    assert result.conclusion == "no_changes"
    assert result.commit is None
    assert result.diffstat is None
    assert result.summary == "Nothing to do: README.md already says it."
    assert branch_head(origin) == ""
    assert all(request.service != "git-receive-pack" for request in server.requests)
    assert not (data_dir / "workspaces" / "job-1").exists()


async def test_what_the_agent_lacked_leaves_the_summary_for_the_result(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI
) -> None:
    fake_anthropic.script(
        Reply(
            [
                text(
                    "The lockfile could not be refreshed.\n\n"
                    "Needed: network access to registry.npmjs.org"
                )
            ]
        )
    )

    result = await run(make_spec())

    assert result.summary == "The lockfile could not be refreshed."
    assert result.needed == ("network access to registry.npmjs.org",)
    # The model was asked for such lines.
    system = "".join(block["text"] for block in fake_anthropic.requests[0].body["system"])
    assert "starting `Needed:` and naming exactly what" in " ".join(system.split())


async def test_the_provider_is_built_while_the_event_loop_runs_on(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI
) -> None:
    # Building a provider first imports its SDK: seconds in which a worker's
    # other jobs must still send their heartbeats, or their leases lapse.
    fake_anthropic.script(Reply([text("Nothing to do.")]))
    loop_ran = threading.Event()
    built_while_loop_ran: list[bool] = []

    def slow_factory(name: str, model: str | None = None, *, openai_auth: str = "api_key") -> Any:
        built_while_loop_ran.append(loop_ran.wait(timeout=10))
        return make_provider(name, model, openai_auth=openai_auth)

    async def beat() -> None:
        await asyncio.sleep(0)
        loop_ran.set()

    heartbeat = asyncio.create_task(beat())
    result = await run(make_spec(), provider_factory=slow_factory)
    await heartbeat

    assert built_while_loop_ran[0] is True
    assert result.conclusion == "no_changes"


async def test_the_log_says_when_each_step_of_the_job_was_done(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_anthropic.script(Reply([text("Nothing to do.")]))
    before = time.time()

    with caplog.at_level("INFO", logger="neo.job"):
        await run(make_spec())

    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neo.job"]
    marks = [line for line in lines if line.get("job") == "job-1"]
    assert [line["event"] for line in marks] == [
        "checkout_done",
        "sandbox_ready",
        "first_model_call",
        "sandbox_closed",
        "published",
    ]
    stamps = [line["ts"] for line in marks]
    assert stamps == sorted(stamps)
    assert before - 0.001 <= stamps[0] <= time.time() + 0.001  # unix time, in ms


# --- workflow files


def edit_workflow_and_notes(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply(
            [
                tool_use("t1", "write_file", {"path": CI_YML, "content": "on: [push, pr]\n"}),
                tool_use(
                    "t2",
                    "write_file",
                    {"path": ".github/workflows/new.yml", "content": "on: push\n"},
                ),
                tool_use("t3", "write_file", {"path": "notes.txt", "content": "notes\n"}),
            ],
            "tool_use",
        ),
        Reply([text("Changed CI and wrote notes.")]),
    )


async def test_workflow_changes_are_reverted_and_reported_and_the_rest_committed(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    edit_workflow_and_notes(fake_anthropic)

    result = await run(make_spec())

    commit = assert_changed(result, origin)
    assert result.blocked_paths == (CI_YML, ".github/workflows/new.yml")
    assert git(origin, "diff", "--name-only", "main", commit) == "notes.txt"
    assert git(origin, "show", f"{commit}:{CI_YML}") == "on: push"
    # The next job is told which of the edits it remembers are not on the branch.
    last = thread_session(data_dir).messages[-1]
    assert (last.role, last.text) == (
        "user",
        f"[Neo: changes to {CI_YML}, .github/workflows/new.yml were reverted before the"
        " commit: files under .github/workflows/ may not be changed in this repository.]",
    )


async def test_only_workflow_changes_make_no_commit(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": f"rm {CI_YML}"})], "tool_use"),
        Reply([text("Removed CI.")]),
    )

    result = await run(make_spec())

    assert result.conclusion == "no_changes"
    assert result.blocked_paths == (CI_YML,)
    assert branch_head(origin) == ""


async def test_workflow_changes_are_committed_when_allowed(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    edit_workflow_and_notes(fake_anthropic)

    result = await run(make_spec(allow_workflow_edits=True))

    commit = assert_changed(result, origin)
    assert result.blocked_paths == ()
    changed = git(origin, "diff", "--name-only", "main", commit).splitlines()
    assert changed == [CI_YML, ".github/workflows/new.yml", "notes.txt"]


async def test_commits_the_agent_made_itself_are_folded_and_checked(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    command = (
        f"echo 'on: pull_request_target' > {CI_YML} && echo hi > hi.txt && git add -A"
        " && git -c user.name=x -c user.email=x@example.com commit -qm sneaky"
    )
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": command})], "tool_use"),
        Reply([text("Committed.")]),
    )

    result = await run(make_spec())

    commit = assert_changed(result, origin)
    assert result.blocked_paths == (CI_YML,)
    assert git(origin, "rev-parse", f"{commit}^") == git(origin, "rev-parse", "main")
    assert git(origin, "log", "-1", "--format=%an", commit) == BOT[0]
    assert git(origin, "diff", "--name-only", "main", commit) == "hi.txt"


async def test_a_repository_the_agent_made_in_the_tree_is_left_out_and_the_next_job_told(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    command = (
        "git init -q vendor/lib && echo lib > vendor/lib/lib.txt && git -C vendor/lib add -A"
        " && git -C vendor/lib -c user.name=x -c user.email=x@example.com commit -qm lib"
        " && echo hi > hi.txt"
    )
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": command})], "tool_use"),
        Reply([text("Vendored lib.")]),
    )

    result = await run(make_spec())

    commit = assert_changed(result, origin)
    assert result.left_out == ("vendor/lib",)
    assert git(origin, "diff", "--name-only", "main", commit) == "hi.txt"
    assert " commit " not in git(origin, "ls-tree", "-r", commit)  # no gitlink
    last = thread_session(data_dir).messages[-1]
    assert (last.role, last.text) == (
        "user",
        "[Neo: left out of the commit: vendor/lib/. A directory holding a git repository"
        " of its own would be committed as a link to a commit no remote has.]",
    )


async def test_generated_files_are_left_out_of_the_commit_and_counted(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    # What a test run leaves where PYTHONDONTWRITEBYTECODE is not set (a `-B`-less
    # tool that compiles, an older checkout's caches): never part of the change.
    command = (
        "mkdir -p __pycache__ .pytest_cache/v && echo x > __pycache__/calc.cpython-311.pyc"
        " && echo y > .pytest_cache/README.md && echo z > .pytest_cache/v/nodeids"
        " && echo hi > hi.txt"
    )
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": command})], "tool_use"),
        Reply([text("Tested.")]),
    )

    result = await run(make_spec())

    commit = assert_changed(result, origin)
    assert result.generated == (("__pycache__/", 1), (".pytest_cache/", 2))
    assert git(origin, "diff", "--name-only", "main", commit) == "hi.txt"


# --- follow-ups


async def test_a_follow_up_continues_the_session_on_the_same_branch(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    first = await run(make_spec())
    first_commit = assert_changed(first, origin)
    asked = len(fake_anthropic.requests)

    fake_anthropic.script(
        Reply([tool_use("t9", "write_file", {"path": "docs.md", "content": "docs\n"})], "tool_use"),
        Reply([text("Documented it.")]),
    )
    second = await run(make_spec(job_id="job-2", prompt="Also add docs."))

    second_commit = assert_changed(second, origin)
    assert git(origin, "rev-parse", f"{second_commit}^") == first_commit
    # The diffstat is the branch's against its base, as the pull request shows it.
    assert second.diffstat is not None
    assert sorted(f.path for f in second.diffstat.files) == ["README.md", "docs.md"]
    assert second.session_id == first.session_id
    # The follow-up's first request: the first job's whole conversation, its
    # answer, then the new task, once.
    before, resumed = conversation(fake_anthropic, asked - 1), conversation(fake_anthropic, asked)
    assert resumed[: len(before)] == before
    assert resumed[len(before) :] == [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Added a line to README.md; grep finds it once."}],
        },
        {"role": "user", "content": [{"type": "text", "text": "Also add docs."}]},
    ]
    # The session on disk holds both conversations.
    assert first.session_id is not None
    session = SessionStore(data_dir).load(first.session_id)
    assert "Documented it." in json.dumps([repr(m) for m in session.messages])


# --- a job whose process died, and retries


# One job in a process of its own, for the test to kill the way a worker dies:
# SIGKILL, so no cleanup and no `finally` runs.
JOB_PROCESS = """
import asyncio, json, sys
from pathlib import Path
from runner.assembly import RunSettings
from runner.job import JobSpec, run
from runner.llm.price_book import PriceBook
from runner.sandbox.requests import Bounds
from runner.subagent import SubagentSettings

values = json.load(sys.stdin)
settings = values["settings"]
settings["subagents"] = SubagentSettings(**settings["subagents"])
settings["fallback"] = tuple(settings["fallback"]) if settings["fallback"] else None
settings["disabled_skills"] = tuple(settings["disabled_skills"])
settings["prices"] = PriceBook(**settings["prices"])
values["settings"] = RunSettings(**settings)
values["data_dir"] = Path(values["data_dir"])
values["setup"] = None if values["setup"] is None else tuple(values["setup"])
values["environment_bounds"] = Bounds(**values["environment_bounds"])
values["co_author"] = tuple(values["co_author"]) if values["co_author"] else None
asyncio.run(run(JobSpec(**values)))
"""


@contextlib.contextmanager
def job_process(spec: JobSpec, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    values = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    values["settings"] = dataclasses.asdict(spec.settings)
    values["environment_bounds"] = dataclasses.asdict(spec.environment_bounds)
    # No MCP server in these jobs: the process's spec keeps the default.
    assert spec.mcp == NO_MCP
    del values["mcp"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", JOB_PROCESS],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,
        )
    try:
        assert process.stdin is not None
        process.stdin.write(json.dumps(values, default=str).encode())
        process.stdin.close()
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


async def until(
    check: Callable[[], bool], what: str, process: subprocess.Popen[bytes], log: Path
) -> None:
    """Poll `check` while `process` runs; fail with its log if it exits or 60 s pass."""
    deadline = time.monotonic() + 60
    while not check():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: did not happen (exit status {process.poll()})\n{log.read_text()}")
        await asyncio.sleep(0.05)


async def kill_at_call(spec: JobSpec, fake: FakeAnthropicAPI, calls: int, log: Path) -> None:
    """Run `spec` in a process of its own and kill -9 it once the fake has `calls` requests."""
    with job_process(spec, log) as process:
        reached = lambda: len(fake.requests) == calls  # noqa: E731
        await until(reached, f"model call {calls}", process, log)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def thread_session(data_dir: Path) -> Session:
    return SessionStore(data_dir).load(session_id_for("octo/hello#12"))


@pytest.mark.parametrize("then", ["retry", "follow-up"])
async def test_the_turns_of_a_job_whose_process_died_never_reach_the_next_job(
    then: str,
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    # A finished first job: the conversation the next jobs of the thread continue.
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    first_commit = assert_changed(await run(make_spec()), origin)
    after_first = thread_session(data_dir)
    # The second job writes a file, then its process dies during its next model call.
    fake_anthropic.script(
        Reply(
            [tool_use("dead1", "write_file", {"path": "dead.txt", "content": "x\n"})], "tool_use"
        ),
        Stall(seconds=300),
    )
    dead_at = len(fake_anthropic.requests)
    dying = make_spec(job_id="job-2", prompt="Also add docs.")
    await kill_at_call(dying, fake_anthropic, dead_at + 2, tmp_path / "job-2.log")
    # What the dead attempt left: its turns in the thread's session, under an
    # open mark, and its working tree; nothing pushed.
    left = thread_session(data_dir)
    assert left.meta.job is not None
    assert (left.meta.job.id, left.meta.job.finished) == ("job-2", False)
    assert "dead1" in repr(left.messages)
    assert (data_dir / "workspaces" / "job-2" / "dead.txt").is_file()
    assert branch_head(origin) == first_commit

    # The queue runs the job again, or (it gave up on it) the next mention comes.
    spec = dying if then == "retry" else make_spec(job_id="job-3", prompt="Add a changelog.")
    fake_anthropic.script(
        Reply([tool_use("b1", "write_file", {"path": "docs.md", "content": "docs\n"})], "tool_use"),
        Reply([text("Documented it.")]),
    )
    asked = len(fake_anthropic.requests)
    result = await run(spec)

    # Its first request: the first job's conversation, then its task, once;
    # nothing of the dead attempt, whose edit is in no tree.
    dead, fresh = conversation(fake_anthropic, dead_at), conversation(fake_anthropic, asked)
    assert tool_use_ids(fresh) == ["t1", "t2"]
    assert fresh[:-1] == dead[:-1]
    assert fresh[-1] == {"role": "user", "content": [{"type": "text", "text": spec.prompt}]}
    assert json.dumps(fresh).count(spec.prompt) == 1
    commit = assert_changed(result, origin)
    assert git(origin, "rev-parse", f"{commit}^") == first_commit
    assert git(origin, "diff", "--name-only", first_commit, commit) == "docs.md"
    # The session moved on by this job only.
    session = thread_session(data_dir)
    assert session.messages[: len(after_first.messages)] == after_first.messages
    assert "dead1" not in repr(session.messages)
    assert session.meta.usage == after_first.meta.usage + result.usage
    assert session.meta.job == JobMark(
        spec.job_id, True, len(after_first.messages), 1, after_first.meta.usage
    )


def inflate(data_dir: Path, exchanges: int = 60, size: int = 10_000) -> Session:
    """The thread's session with `exchanges` long exchanges added, past any window: their
    words are the model's own, which clearing old tool results does not shorten."""
    store = SessionStore(data_dir)
    session = thread_session(data_dir)
    messages = list(session.messages)
    for n in range(exchanges):
        call = ToolUse(f"old{n}", "read_file", {"path": f"log{n}.txt"})
        messages.append(Message("user", (Text(f"Look at log {n}."),)))
        messages.append(Message("assistant", (call,)))
        messages.append(Message("user", (ToolResult(call.id, (Text(f"log {n}"),)),)))
        messages.append(Message("assistant", (Text(f"Log {n} is fine: " + f"{n} " * size),)))
    inflated = Session(session.meta, tuple(messages))
    store.save(inflated)
    return inflated


SUMMARY = Reply([text("## Task\n- the README line\n## Next steps\n- docs")])


async def test_a_large_saved_session_is_compacted_before_the_follow_up_starts(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    assert_changed(await run(make_spec()), origin)
    inflated = inflate(data_dir)
    asked = len(fake_anthropic.requests)
    fake_anthropic.script(
        SUMMARY,
        Reply([tool_use("d1", "write_file", {"path": "docs.md", "content": "docs\n"})], "tool_use"),
        Reply([text("Documented it.")]),
    )

    result = await run(make_spec(job_id="job-2", prompt="Also add docs."))

    assert_changed(result, origin)
    summary_call, first_call = fake_anthropic.requests[asked : asked + 2]
    assert "tools" not in summary_call.body
    messages = first_call.body["messages"]
    # One head: the earlier requests, the new one, the notes; the long middle is gone.
    assert len(messages) == 1
    head = [block["text"] for block in messages[0]["content"]]
    assert head[0] == "[Earlier request 1 of 61]\nAdd a line to README.md and check it."
    assert head[-2] == "Current request:\n\nAlso add docs."
    assert "## Next steps" in head[-1]
    assert len(json.dumps(messages)) < len(repr(inflated.messages)) / 10
    session = thread_session(data_dir)
    assert [c.stage for c in session.meta.compactions] == ["summarised"]
    assert session.meta.job is not None
    assert session.meta.job.finished


def requests_in(head: dict[str, Any]) -> list[str]:
    """The requests a compacted head keeps, without their labels."""
    found = []
    for block in head["content"]:
        label, _, request = block["text"].partition("\n")
        if label.startswith("[Earlier request") or label == "Current request:":
            found.append(request.removeprefix("\n"))
    return found


async def test_three_jobs_in_a_thread_with_compactions_between_keep_all_three_requests(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    # Before: each summary's head was the first task and the notes, so the
    # second job's request, dropped with the middle, was gone by the third.
    tasks = ["Add a line to README.md and check it.", "Also add docs.", "And a changelog."]
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    assert_changed(await run(make_spec(prompt=tasks[0])), origin)
    files = ["docs.md", "CHANGES.md"]
    for number, (task, name) in enumerate(zip(tasks[1:], files, strict=True), start=2):
        inflate(data_dir, exchanges=30)
        asked = len(fake_anthropic.requests)
        fake_anthropic.script(
            SUMMARY,
            Reply(
                [tool_use(f"w{number}", "write_file", {"path": name, "content": "x\n"})], "tool_use"
            ),
            Reply([text(f"Wrote {name}.")]),
        )
        assert_changed(await run(make_spec(job_id=f"job-{number}", prompt=task)), origin)
        summarised, first_call = fake_anthropic.requests[asked : asked + 2]
        # The summariser is shown every request.
        shown = summarised.body["messages"][0]["content"][0]["text"]
        assert all(earlier in shown for earlier in tasks[:number])

    head = first_call.body["messages"][0]
    kept = [r for r in requests_in(head) if not r.startswith("Look at log")]
    assert kept == tasks
    assert head["content"][-2]["text"] == "Current request:\n\nAnd a changelog."
    session = thread_session(data_dir)
    assert [c.stage for c in session.meta.compactions] == ["summarised", "summarised"]


async def test_a_job_that_compacted_and_died_leaves_the_session_as_it_found_it(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    assert_changed(await run(make_spec()), origin)
    found = inflate(data_dir)
    fake_anthropic.script(
        SUMMARY,
        Reply([tool_use("w1", "write_file", {"path": "dead.txt", "content": "x\n"})], "tool_use"),
        Stall(seconds=300),
    )
    dead_at = len(fake_anthropic.requests)
    dying = make_spec(job_id="job-2", prompt="Also add docs.")
    await kill_at_call(dying, fake_anthropic, dead_at + 3, tmp_path / "job-2.log")

    left = thread_session(data_dir)
    # The job compacted before its first save: the file is as the job found
    # it (or, had it saved first, under its open mark, which cuts back to it).
    assert left.meta.job is not None
    seen = before_job(left) if left.meta.job.id == "job-2" else left
    assert seen.messages == found.messages
    assert left.meta.compactions == ()


async def test_a_retry_of_a_job_that_ended_starts_from_the_session_before_it(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    assert_changed(await run(make_spec()), origin)
    after_first = thread_session(data_dir)
    fake_anthropic.script(
        Reply([tool_use("c1", "write_file", {"path": "docs.md", "content": "docs\n"})], "tool_use"),
        Reply([text("Documented it.")]),
    )
    spec = make_spec(job_id="job-2", prompt="Also add docs.")
    asked = len(fake_anthropic.requests)
    assert_changed(await run(spec), origin)

    # Its worker died before it could record the job's end: the queue runs it again.
    fake_anthropic.script(Reply([text("docs.md is there already.")]))
    again_at = len(fake_anthropic.requests)
    again = await run(spec)

    assert conversation(fake_anthropic, again_at) == conversation(fake_anthropic, asked)
    assert again.conclusion == "no_changes", again
    session = thread_session(data_dir)
    assert session.messages[: len(after_first.messages)] == after_first.messages
    assert "c1" not in repr(session.messages)
    assert session.meta.usage == after_first.meta.usage + again.usage


@pytest.mark.parametrize("ending", ["failed", "cancelled"])
async def test_a_follow_up_is_told_that_the_job_before_it_kept_nothing(
    ending: str,
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    stop = asyncio.Event()
    then: list[Any] = []
    if ending == "failed":
        # The edit is made, then the provider refuses the next call.
        call = tool_use("t1", "write_file", {"path": "x.txt", "content": "x\n"})
        then = [ErrorReply(400, "invalid_request_error", "messages: something is off")]
        spec = make_spec()
    else:
        call = tool_use("t1", "bash", {"command": "sleep 30"})
        spec = make_spec()

    def on_event(event: Event) -> None:
        if ending == "cancelled" and isinstance(event, ToolStarted):
            stop.set()

    fake_anthropic.script(Reply([call], "tool_use"), *then)
    first = await asyncio.wait_for(run(spec, on_event=on_event, stop=stop), 60)
    assert first.conclusion == ending, first
    assert branch_head(origin) == ""

    fake_anthropic.script(Reply([text("Starting over.")]))
    asked = len(fake_anthropic.requests)
    second = await run(make_spec(job_id="job-2", prompt="Try again."))

    # The first job's conversation with its call answered, then Neo's note and
    # the new task in one user message.
    messages = conversation(fake_anthropic, asked)
    assert tool_use_ids(messages) == ["t1"]
    last = messages[-1]["content"]
    assert [block["type"] for block in last] == ["tool_result", "text", "text"]
    assert last[2]["text"] == "Try again."
    reason = (
        "failed (provider_http_error: "
        if ending == "failed"
        else "was cancelled before it finished"
    )
    assert last[1]["text"].startswith(f"[Neo: this job {reason}")
    assert last[1]["text"].endswith(
        f"Its working tree was discarded: none of the changes made in it is on branch {BRANCH}.]"
    )
    assert second.conclusion == "no_changes"


# --- failures


WRAP_UP = Reply([text("Added notes.md.\n\n- [ ] left: the changelog")])


def write_then_look(fake: FakeAnthropicAPI) -> None:
    fake.script(
        Reply([tool_use("w1", "write_file", {"path": "notes.md", "content": "n\n"})], "tool_use"),
        Reply([tool_use("w2", "bash", {"command": "cat notes.md"})], "tool_use"),
    )


async def test_out_of_turns_with_work_in_the_tree_it_is_pushed_as_incomplete(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    write_then_look(fake_anthropic)
    fake_anthropic.script(WRAP_UP)

    result = await run(make_spec(max_turns=2))

    assert (result.conclusion, result.error_kind) == ("changed", "max_turns")
    assert result.incomplete
    assert result.summary == "Added notes.md.\n\n- [ ] left: the changelog"
    commit = assert_changed(result, origin, incomplete=True)
    assert "notes.md" in git(origin, "show", "--name-only", "--format=", commit)
    last = fake_anthropic.requests[-1].body
    assert last["tool_choice"] == {"type": "none"}
    assert "cannot call tools" in last["messages"][-1]["content"][-1]["text"]
    # Exactly the turns allowed, and the one last word: three calls billed.
    assert len(fake_anthropic.requests) == 3
    assert result.num_turns == 3


async def test_out_of_turns_with_nothing_changed_it_fails_without_a_last_word(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    fake_anthropic.script(
        Reply([tool_use("g1", "glob", {"pattern": "*"})], "tool_use"),
        Reply([tool_use("g2", "glob", {"pattern": "*"})], "tool_use"),
    )
    before = branch_head(origin, "main")

    result = await run(make_spec(max_turns=2))

    assert (result.conclusion, result.error_kind) == ("failed", "max_turns")
    assert not result.incomplete
    assert len(fake_anthropic.requests) == 2
    assert branch_head(origin, "main") == before


async def test_a_cost_limit_stops_before_the_call_that_would_pass_it(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    calls = itertools.count(1)

    def write_all_it_may(body: dict[str, Any]) -> Reply:
        # Each call writes as much as it was allowed to: its worst case, all but
        # the prompt's cache-write premium.
        if body.get("tool_choice") == {"type": "none"}:
            return WRAP_UP
        n = next(calls)
        write = tool_use(f"w{n}", "write_file", {"path": f"notes{n}.md", "content": "n\n"})
        usage = WireUsage(input_tokens=10_000, output_tokens=body["max_tokens"])
        return Reply([write], "tool_use", usage=usage)

    fake_anthropic.script(*([write_all_it_may] * 20))
    spec = make_spec(model="claude-sonnet-4-6", max_cost_usd=0.70)

    result = await run(spec)

    assert (result.conclusion, result.error_kind) == ("changed", "max_cost")
    assert result.error_message is not None
    assert "of the $0.70 cost limit is spent: the next model call would cost" in (
        result.error_message
    )
    # Output was lowered to what was left, the call that could not be paid for
    # was never made, and the last word was paid with what was kept for it.
    asked = [request.body["max_tokens"] for request in fake_anthropic.requests]
    assert asked[0] < 32_000
    assert fake_anthropic.requests[-1].body["tool_choice"] == {"type": "none"}
    assert result.summary == "Added notes.md.\n\n- [ ] left: the changelog"
    assert result.num_turns == len(fake_anthropic.requests)
    assert result.cost_usd is not None
    assert result.cost_usd <= 0.70
    assert_changed(result, origin, incomplete=True)


async def test_the_time_limit_fails_the_job_and_removes_the_workspace(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    fake_anthropic.script(
        Reply([tool_use("t1", "glob", {"pattern": "*"})], "tool_use"),
        Reply([tool_use("t2", "bash", {"command": "sleep 30"})], "tool_use"),
    )

    result = await run(make_spec(time_limit=3.0))

    # Nothing in the tree to keep: no last word, nothing pushed.
    assert len(fake_anthropic.requests) == 2
    assert result.conclusion == "failed"
    assert result.error_kind == "timeout"
    assert result.error_message is not None
    assert "time limit" in result.error_message
    assert branch_head(origin) == ""
    assert not (data_dir / "workspaces" / "job-1").exists()
    # The session was saved, with the interrupted tool call answered, and a
    # note that the job's edits were not kept.
    assert result.session_id is not None
    session = SessionStore(data_dir).load(result.session_id)
    assert session.meta.job is not None
    assert session.meta.job.finished
    # The call answered first; Neo's note on the job's end last (a note on the
    # time left may stand between them).
    blocks = session.messages[-1].content
    answered, note = blocks[0], blocks[-1]
    assert isinstance(answered, ToolResult)
    assert answered.tool_use_id == "t2"
    assert isinstance(note, Text)
    assert "failed (timeout: the job did not finish within its time limit of 3s)" in note.text


async def test_the_time_limit_with_work_in_the_tree_pushes_it_as_incomplete(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    fake_anthropic.script(
        Reply([tool_use("t1", "write_file", {"path": "x.txt", "content": "x\n"})], "tool_use"),
        Reply([tool_use("t2", "bash", {"command": "sleep 30"})], "tool_use"),
        WRAP_UP,
    )

    result = await run(make_spec(time_limit=3.0))

    assert (result.conclusion, result.error_kind) == ("changed", "timeout")
    commit = assert_changed(result, origin, incomplete=True)
    assert git(origin, "show", "--name-only", "--format=", commit) == "x.txt"
    assert result.summary == "Added notes.md.\n\n- [ ] left: the changelog"
    assert not (data_dir / "workspaces" / "job-1").exists()
    # The interrupted call answered, then the last word, in the thread's session.
    assert result.session_id is not None
    session = SessionStore(data_dir).load(result.session_id)
    assert [m.role for m in session.messages[-2:]] == ["user", "assistant"]
    assert session.messages[-1].text == result.summary


async def test_stop_cancels_the_job(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
) -> None:
    fake_anthropic.script(Reply([tool_use("t1", "bash", {"command": "sleep 30"})], "tool_use"))
    stop = asyncio.Event()

    def on_event(event: Event) -> None:
        if isinstance(event, ToolStarted):
            stop.set()

    result = await asyncio.wait_for(run(make_spec(), on_event=on_event, stop=stop), 20)

    assert result.conclusion == "cancelled"
    assert result.error_kind == "interrupted"
    assert branch_head(origin) == ""
    assert not (data_dir / "workspaces" / "job-1").exists()


async def test_a_rejected_push_fails_in_one_line_without_the_token(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    server: FakeGitServer,
    origin: Path,
    data_dir: Path,
) -> None:
    def rotate_token_then_answer(body: dict[str, Any]) -> Reply:
        server.token = OTHER  # the job's token is no longer accepted
        return Reply([text("Wrote x.txt.")])

    fake_anthropic.script(
        Reply([tool_use("t1", "write_file", {"path": "x.txt", "content": "x\n"})], "tool_use"),
        rotate_token_then_answer,
    )

    result = await run(make_spec())

    assert result.conclusion == "failed"
    assert result.error_kind == "git_error"
    assert result.error_message is not None
    assert "\n" not in result.error_message
    assert "push" in result.error_message
    assert all(leak.decode() not in result.error_message for leak in LEAKS)
    assert branch_head(origin) == ""
    assert not (data_dir / "workspaces" / "job-1").exists()


def assert_no_host_path(result: JobResult, data_dir: Path, *, names: str) -> None:
    assert result.conclusion == "failed", result
    assert result.error_kind == "git_error"
    message = result.error_message
    assert message is not None
    assert "\n" not in message
    assert names in message
    assert str(data_dir) not in message
    assert os.path.realpath(data_dir) not in message
    assert "<data dir>/" in message


async def test_a_failing_clone_names_no_host_path(
    make_spec: Callable[..., JobSpec], server: FakeGitServer, data_dir: Path
) -> None:
    # A mirror left broken (a full disk, a crash): git names its path in its error.
    spec = make_spec()
    mirror = MirrorCache(data_dir / "mirrors").path(spec.repo_url)
    (mirror / "objects").mkdir(parents=True)
    (mirror / "HEAD").write_text("not a ref\n")

    result = await run(spec)

    assert_no_host_path(result, data_dir, names="mirrors/")


async def test_a_failing_commit_names_no_host_path(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, data_dir: Path
) -> None:
    # git's message names the lock file by its absolute path, in the workspace.
    fake_anthropic.script(
        Reply(
            [tool_use("t1", "bash", {"command": "echo x > x.txt && touch .git/index.lock"})],
            "tool_use",
        ),
        Reply([text("Wrote x.txt.")]),
    )

    result = await run(make_spec())

    assert_no_host_path(result, data_dir, names="workspaces/job-1/.git/index.lock")


async def test_a_provider_error_fails_in_one_line(
    make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch, origin: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong-key")

    result = await run(make_spec())

    assert result.conclusion == "failed"
    assert result.error_kind == "provider_http_error"
    assert result.error_message is not None
    assert "401" in result.error_message
    assert branch_head(origin) == ""


async def test_an_unknown_repository_fails_in_one_line(
    make_spec: Callable[..., JobSpec], server: FakeGitServer
) -> None:
    result = await run(make_spec(repo_url=server.url("octo/absent.git")))

    assert result.conclusion == "failed"
    assert result.error_kind == "git_error"
    assert result.num_turns == 0


async def test_a_failing_setup_command_fails_the_job_before_the_model_is_asked(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, data_dir: Path
) -> None:
    result = await run(make_spec(setup=("true", "exit 3")))

    assert result.conclusion == "failed"
    assert result.error_kind == "sandbox_error"
    assert result.error_message == "setup command 'exit 3' failed with exit code 3"
    # What ran up to it and how it ended, for the report.
    assert result.setup is not None
    assert [(step.command, step.exit_code) for step in result.setup.steps] == [
        ("true", 0),
        ("exit 3", 3),
    ]
    assert fake_anthropic.requests == []
    # No agent ran: the thread's session is as the job found it (here: none).
    assert not SessionStore(data_dir).path(session_id_for("octo/hello#12")).exists()
    assert not (data_dir / "workspaces" / "job-1").exists()


def system_texts(fake: FakeAnthropicAPI) -> list[list[str]]:
    """The system segments of each request, as sent."""
    return [[block["text"] for block in request.body["system"]] for request in fake.requests]


async def test_the_system_prompt_states_setup_budget_and_where_the_summary_goes(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, data_dir: Path
) -> None:
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-1", [])
    spec = make_spec(setup=("true", "test -f README.md"), max_turns=7, time_limit=120.0)

    result = await run(spec)

    assert result.conclusion == "changed", result

    sent = system_texts(fake_anthropic)
    assert len(sent) == 3
    # Every call of the run sends the very same segments: the cache holds.
    assert sent[0] == sent[1] == sent[2]
    environment = sent[0][-1]
    assert "Network: your commands can reach the network." in environment  # local sandbox
    assert "Setup: these commands ran before you started, at the repository's root:\n" in (
        environment
    )
    assert "\n- `true`: succeeded in " in environment
    assert "\n- `test -f README.md`: succeeded in " in environment
    assert result.setup is not None
    assert [step.command for step in result.setup.steps] == ["true", "test -f README.md"]
    assert "Budget: at most 7 model turns and 2 minutes for the whole run." in environment
    assert "Your final message becomes the summary of your work on GitHub" in environment
    assert "Changes under .github/workflows/ are reverted before the commit" in environment


def test_the_token_is_not_in_the_spec_repr(make_spec: Callable[..., JobSpec]) -> None:
    assert TOKEN not in repr(make_spec())


# --- the docker sandbox


@pytest.fixture
def docker_client() -> Iterator[DockerClient]:
    """The local engine with the sandbox image; its absence fails the test, never skips it."""
    try:
        client = docker.from_env()
        client.ping()
        client.images.get("neo-sandbox:local")
    except ImageNotFound:
        pytest.fail("neo-sandbox:local is missing: build it with scripts/build-images")
    except DockerException as error:
        pytest.fail(f"the Docker engine is not reachable ({error}): run scripts/ensure-docker")
    yield client
    client.close()


async def test_a_job_in_the_docker_sandbox_commits_and_pushes(
    make_spec: Callable[..., JobSpec],
    fake_anthropic: FakeAnthropicAPI,
    origin: Path,
    data_dir: Path,
    docker_client: DockerClient,
) -> None:
    seen: list[Path] = []
    edit_and_check(fake_anthropic, data_dir / "workspaces" / "job-docker", seen)

    # A setup command makes the job prepare its environment first (and no network).
    spec = make_spec(job_id="job-docker", sandbox="docker", setup=("test -f README.md",))

    try:
        result = await run(spec)
    finally:
        kept = prune(
            docker_client, Bounds(), everything=True, orphan=orphaned, repository=spec.repo_url
        )

    commit = assert_changed(result, origin)
    assert git(origin, "show", f"{commit}:README.md") == "# fixture\n\nEdited by Neo."
    assert "Co-authored-by: Mona Lisa <mona@example.com>" in git(origin, "log", "-1", commit)
    tool_result = fake_anthropic.requests[2].body["messages"][-1]["content"][0]
    assert "exit code: 0" in json.dumps(tool_result)
    # The model is told the container is offline, and what its setup did.
    environment = system_texts(fake_anthropic)[0][-1]
    assert "Network: none." in environment
    assert "\n- `test -f README.md`: succeeded in " in environment
    # The environment it prepared was kept for the repository's next job.
    assert result.setup is not None
    assert result.setup.kept
    assert len(kept) == 1
    assert seen == [data_dir / "workspaces" / "job-docker"]
    assert_no_token_sent(fake_anthropic)
    assert not (data_dir / "workspaces" / "job-docker").exists()
    for job in ("job-docker", "job-docker-setup"):
        left = docker_client.api.containers(all=True, filters={"label": f"neo.job={job}"})
        assert not left, [(c["Names"], c["State"], c["Status"]) for c in left]


def skill_md(body: str) -> bytes:
    return f"---\nname: release-notes\ndescription: Notes.\n---\n{body}\n".encode()


async def test_a_pull_request_job_follows_its_default_branchs_skill_not_the_branchs(
    make_spec: Callable[..., JobSpec], fake_anthropic: FakeAnthropicAPI, origin: Path
) -> None:
    add_commit(origin, {".neo/skills/release-notes/SKILL.md": skill_md("the main way")})
    git(origin, "branch", "feature", "main")
    add_commit(
        origin, {".neo/skills/release-notes/SKILL.md": skill_md("the branch way")}, branch="feature"
    )
    path = "/neo/skills/release-notes/SKILL.md"
    fake_anthropic.script(
        Reply([tool_use("t1", "read_file", {"path": path})], "tool_use"),
        Reply([text("Done.")]),
    )
    events: list[Event] = []

    result = await run(
        make_spec(
            work_branch="feature",
            skills_branch="main",
            prompt="Quoted task with $release-notes",
            invocation="$release-notes please",
        ),
        on_event=events.append,
    )

    assert result.conclusion == "no_changes", result.error_message
    first = conversation(fake_anthropic, 0)[0]["content"]
    assert "the main way" in str(first)
    assert "the branch way" not in str(first)
    system = "".join(block["text"] for block in fake_anthropic.requests[0].body["system"])
    assert f"- release-notes — Notes. ({path})" in system
    read = conversation(fake_anthropic, 1)[-1]["content"][0]
    assert "the main way" in str(read["content"])
    assert [e.payload for e in events if isinstance(e, ToolNotice)] == [
        SkillsInvoked(("release-notes",))
    ]
