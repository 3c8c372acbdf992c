"""The worker end to end: a real SqliteQueue, githubkit against the fake GitHub, the
git CLI against the fake git server, the anthropic SDK against the fake Messages
API, and the local sandbox."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from githubkit import GitHub, TokenAuthStrategy

from bot.config.settings import Settings, load_settings
from bot.github.app import (
    CONFIG_PERMISSIONS,
    JOB_PERMISSIONS,
    WORKFLOW_JOB_PERMISSIONS,
    AppAuth,
    GitHubApp,
    InstallationToken,
)
from bot.github.client import Spacers
from bot.jobs import (
    Conclusion,
    Job,
    JobKind,
    JobOutcome,
    JobRequest,
    JobState,
    Lane,
    Thread,
    TriggerKind,
)
from bot.queue import Heartbeat, JobQueue, SqliteQueue, WakingQueue
from bot.worker.config import OWNER_CONFIG_TTL, ConfigSource
from bot.worker.loop import Worker, WorkerDeps, WorkerOptions
from bot.worker.progress import job_marker
from bot.worker.reported import reported_outcome
from runner.git import MirrorCache
from tests.fakes import (
    FakeAnthropicAPI,
    FakeGitHub,
    FakeGitServer,
    Reply,
    Stall,
    add_commit,
    basic_auth,
    git_env,
    make_repo,
    text,
    tool_use,
)
from tests.fakes.github_api import ALL_JOB_PERMISSIONS

REPO = "octo/hello"
INSTALLATION = 7
LEASE = 60.0
# An installation whose owner accepted the `workflows` permission.
WITH_WORKFLOWS = {**ALL_JOB_PERMISSIONS, "workflows": "write"}


class _Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class _GitServer(FakeGitServer):
    """The fake git server accepting the job token for REPO the fake GitHub issued last."""

    def __init__(self, root: Path, github: FakeGitHub) -> None:
        self._github = github
        super().__init__(root)

    @property
    def token(self) -> str:
        tokens = [
            t
            for t in self._github.tokens
            if REPO in t.repositories and t.permissions.get("contents") == "write"
        ]
        return tokens[-1].token if tokens else "no-token-yet"

    @token.setter
    def token(self, value: str) -> None:
        pass

    def may_push_workflows(self, authorization: str | None, path: str) -> bool:
        """GitHub's rule: only a token with `workflows: write` touches workflow files."""
        return any(
            authorization == basic_auth(issued.token)
            and issued.permissions.get("workflows") == "write"
            for issued in self._github.tokens
        )


@pytest.fixture(autouse=True)
def anthropic_env(fake_anthropic: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in fake_anthropic.env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.install(INSTALLATION, "octo", ["hello"])
        fake.set_permission(REPO, "mona", "write")
        yield fake


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=3)
    return repo


@pytest.fixture
def git_server(tmp_path: Path, origin: Path, github: FakeGitHub) -> Iterator[FakeGitServer]:
    with _GitServer(tmp_path / "served", github) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, github: FakeGitHub, git_server: FakeGitServer) -> Settings:
    return load_settings(
        {
            "NEO_GITHUB_APP_ID": str(github.app_id),
            "NEO_GITHUB_PRIVATE_KEY": github.private_key_pem,
            "NEO_WEBHOOK_SECRET": "secret",
            "NEO_GITHUB_API_URL": github.base_url,
            "NEO_GITHUB_GIT_URL": git_server.base_url,
            "NEO_DATA_DIR": str(tmp_path / "data"),
            "NEO_SANDBOX": "local",
            "NEO_ALLOW_LOCAL_SANDBOX": "1",
        }
    )


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
async def queue(tmp_path: Path, clock: _Clock) -> AsyncIterator[SqliteQueue]:
    async with SqliteQueue(tmp_path / "queue.db", clock=clock) as opened:
        yield opened


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


def request(number: int, comment: int, *, author: str = "mona", delivery: str = "d1") -> JobRequest:
    return JobRequest(
        kind=JobKind.TASK,
        thread=Thread(REPO, number),
        installation_id=INSTALLATION,
        event="issue_comment.created",
        trigger=TriggerKind("issue_comment.created"),
        trigger_id=comment,
        author=author,
        author_association="COLLABORATOR",
        instruction="@neo add a line to the README",
        dedupe_key=f"comment:{comment}",
        delivery_id=delivery,
    )


async def enqueue(queue: SqliteQueue, job_request: JobRequest) -> int:
    queued = await queue.enqueue(job_request.delivery_id, [job_request])
    return queued.job_ids[0]


RESULT_KEYS = {"conclusion", "pr_url", "error", "branch", "session_id", "cost_usd", "report"}


def worker(
    queue: Any, app: AppAuth, settings: Settings, name: str = "w1", **options: Any
) -> Worker:
    # No spacing of writes and no retry waits: the fakes answer at once.
    chosen: dict[str, Any] = {
        "concurrency": 2,
        "lease": LEASE,
        "heartbeat_every": 0.2,
        "poll_every": 0.05,
        "edit_every": 0.2,
        "grace": 5.0,
        "spacers": Spacers(0.0),
    } | options
    deps = {name: chosen.pop(name) for name in _DEPS if name in chosen}
    config = {_CONFIG[name]: chosen.pop(name) for name in list(chosen) if name in _CONFIG}
    return Worker(
        WorkerDeps(queue=queue, app=app, settings=settings, **deps),
        WorkerOptions(name=name, **chosen),
        ConfigSource(**config),
    )


_DEPS = ("run_job", "clock", "sleep", "spacers", "client_options", "wakeup", "mirrors")
_CONFIG = {
    "config_path": "path",
    "config_overrides": "overrides",
    "overrides_source": "overrides_source",
}


async def run_until(w: Worker, done: Any, timeout: float = 60.0) -> None:
    """Run `w` until `done()` is true, then stop it and let it drain."""
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    deadline = time.monotonic() + timeout
    try:
        while not await done():
            assert not task.done(), task
            assert time.monotonic() < deadline, "the worker did not get there in time"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def finished(queue: SqliteQueue, job_id: int) -> Any:
    async def check() -> bool:
        job = await queue.get(job_id)
        assert job is not None
        return job.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)

    return check


def script_edit(fake: FakeAnthropicAPI) -> None:
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
        Reply([tool_use("t2", "bash", {"command": "grep -c Neo README.md"})], "tool_use"),
        Reply([text("Added a line to README.md; grep finds it once.")]),
    )


def git(origin: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), *args], capture_output=True, env=git_env(), check=True
    )
    return done.stdout.decode().strip()


def bot_comments(github: FakeGitHub, number: int) -> list[Mapping[str, Any]]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


async def get(queue: SqliteQueue, job_id: int) -> Job:
    job = await queue.get(job_id)
    assert job is not None
    return job


def prompt_of(fake: FakeAnthropicAPI, index: int = 0) -> str:
    """The text of the first user message of request `index`: the job's task prompt."""
    content = fake.requests[index].body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def conversation(fake: FakeAnthropicAPI, index: int) -> list[Any]:
    """The messages of request `index`, without the cache breakpoints, which move."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return [plain(message) for message in fake.requests[index].body["messages"]]


# --- the happy path


async def test_a_mention_becomes_a_draft_pr_and_one_comment_turned_report(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.result is not None
    pulls = github.pulls(REPO)
    assert len(pulls) == 1
    pull = pulls[0]
    assert pull["head"]["ref"] == f"neo/issue-{number}"
    assert pull["base"]["ref"] == "main"
    assert pull["draft"] is True
    # The change as the model's summary line says it, not the issue's title.
    assert pull["title"] == "Added a line to README.md; grep finds it once"
    assert f"Fixes #{number}" in pull["body"]
    assert "README.md" in pull["body"]
    assert job.result.pr_url == pull["html_url"]
    assert set(job.result.to_json()) >= RESULT_KEYS
    assert job.result.branch == f"neo/issue-{number}"
    assert str(job.result.session_id).startswith("octo-hello-")
    assert isinstance(job.result.cost_usd, float)
    # One comment of the bot's: the progress comment, edited into the report.
    mine = bot_comments(github, number)
    assert len(mine) == 1
    report = mine[0]["body"]
    # The report carries, hidden, what the queue keeps: the outcome, and the spend.
    reported = reported_outcome(report, job)
    assert reported is not None
    assert reported.outcome == job.result
    assert [(r.job_id, r.cost_usd) for r in reported.spend] == [(job_id, job.result.cost_usd)]
    assert "**Done**" in report
    assert pull["html_url"] in report
    assert "grep -c Neo README.md" in report
    creates = [r for r in github.requests if r.method == "POST" and r.path.endswith("/comments")]
    assert len(creates) == 1
    # The commit in the bare repository, with the requester as co-author.
    head = git(origin, "rev-parse", f"refs/heads/neo/issue-{number}")
    trailer = git(origin, "log", "-1", "--format=%(trailers:key=Co-authored-by)", head)
    assert trailer.startswith("Co-authored-by: mona <")
    assert "+mona@users.noreply" in trailer
    assert git(origin, "show", f"{head}:README.md") == "# fixture\n\nEdited by Neo."
    # 👀 on the trigger, after the comment: the reaction waits behind it for its turn.
    posts = [r.path for r in github.requests if r.method == "POST" and "/repos/" in r.path]
    assert posts[:2] == [
        f"/repos/{REPO}/issues/{number}/comments",
        f"/repos/{REPO}/issues/comments/{comment}/reactions",
    ]
    reactions = github.reactions(REPO)
    assert [(r["subject"], r["subject_id"], r["content"]) for r in reactions] == [
        ("issue_comment", comment, "eyes")
    ]
    # The task reached the model as quoted data.
    first = str(fake_anthropic.requests[0].body["messages"][0])
    assert "Say hello in the README" in first
    assert "add a line to the README" in first
    # The run's event log, as the run page and `neo jobs logs` read it.
    events = await queue.events_after(job_id, 0)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.kind, e.data.get("state")) for e in events[:2]] == [
        ("state", "queued"),
        ("state", "running"),
    ]
    assert events[0].at == job.created_at
    assert (events[-1].kind, events[-1].data) == (
        "state",
        {"state": "finished", "conclusion": "success"},
    )
    calls = [e.data for e in events if e.kind == "tool_call"]
    assert [(c["call_id"], c["name"]) for c in calls] == [("t1", "edit_file"), ("t2", "bash")]
    assert calls[1]["args"] == {"command": "grep -c Neo README.md"}
    (grep,) = [e.data for e in events if e.kind == "tool_result" and e.data["call_id"] == "t2"]
    assert (grep["is_error"], str(grep["output"]).split("\n")[0]) == (False, "1")
    turns = [e.data for e in events if e.kind == "turn"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert 0 < int(str(turns[0]["input_tokens"])) < int(str(turns[-1]["input_tokens"]))
    assert turns[-1]["cost_usd"] == job.result.cost_usd
    assert "".join(str(e.data["text"]) for e in events if e.kind == "text") == (
        "Added a line to README.md; grep finds it once."
    )


async def test_the_comment_the_pr_and_the_report_do_not_wait_behind_the_installations_writes(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))
    # One ordinary write, then one every ten minutes: 👀 and the live edits of
    # the progress comment wait their turn; what the requester waits for does
    # not, and a live edit still waiting when the run ends is dropped.
    spacers = Spacers(600.0, burst=1, urgent_burst=3)

    await run_until(
        worker(queue, app, settings, spacers=spacers, grace=0.5), finished(queue, job_id)
    )

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    (pull,) = github.pulls(REPO)
    (report,) = bot_comments(github, number)
    assert "**Done**" in report["body"]
    assert pull["html_url"] in report["body"]
    assert github.reactions(REPO) == []  # still waiting its turn when the worker stopped


async def test_the_images_the_issue_and_the_trigger_show_reach_the_model_after_the_task(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    png, gif = b"\x89PNG\r\n\x1a\n" + b"\x07" * 40, b"GIF89a" + b"\x01" * 20
    shot = github.attachments.add(png)
    after = github.attachments.add(gif, "image/gif")
    claimed = github.attachments.add(png)
    number = github.add_issue(
        REPO,
        "The button is misaligned",
        f"See:\n\n![screenshot]({shot})\n\nNot this one: `{claimed}`",
        user="mona",
    )
    github.add_comment(REPO, number, f"Elsewhere: ![other]({claimed})", user="octocat")
    comment = github.add_comment(
        REPO, number, f"@neo make it look like this ![after]({after})", user="mona"
    )
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    content = fake_anthropic.requests[0].body["messages"][0]["content"]
    assert "The button is misaligned" in content[0]["text"]  # the task, quoted, first
    assert [block["type"] for block in content[1:5]] == ["text", "image", "text", "image"]
    assert content[1]["text"].startswith("[Image 1 of 2, from the opening post by @mona")
    assert content[3]["text"].startswith(
        "[Image 2 of 2, from the comment by @mona that asked for this"
    )
    assert content[2]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(png).decode(),
    }
    assert content[4]["source"]["media_type"] == "image/gif"
    # From the signed addresses GitHub rendered, without the job's token; nothing else.
    fetched = github.attachments.requests
    assert [(signed, authorization) for _, signed, authorization in fetched] == [(True, None)] * 2
    assert claimed.rsplit("/", 1)[-1] not in {asset for asset, _, _ in fetched}


async def test_a_repository_without_drafts_gets_a_regular_pr_and_the_report_says_so(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # A private repository on a free plan: GitHub answers a draft with 422.
    github.refuse_drafts(REPO)
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    (pull,) = github.pulls(REPO)
    assert pull["draft"] is False
    (report,) = bot_comments(github, number)
    assert pull["html_url"] in report["body"]
    assert "does not allow draft pull requests" in report["body"]
    assert "regular pull request" in report["body"]


async def test_out_of_turns_with_work_done_it_opens_an_incomplete_draft_pr(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # Ready pull requests by default: an incomplete one is a draft all the same.
    github.put_file(REPO, ".github/neo.yml", "max_turns: 1\ndraft: false\n")
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    edit = {
        "path": "README.md",
        "old_string": "# fixture\n",
        "new_string": "# fixture\n\nEdited by Neo.\n",
    }
    fake_anthropic.script(
        Reply([tool_use("t1", "edit_file", edit)], "tool_use"),
        Reply([text("Added the line.\n\n- [ ] left: check it with grep")]),
    )
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED, job.result
    assert job.result is not None
    assert job.result.conclusion == "incomplete"
    (pull,) = github.pulls(REPO)
    assert pull["draft"] is True
    assert "⚠️ Incomplete: Neo stopped before it finished (`max_turns" in pull["body"]
    # What is left leads; merging it would not close the issue.
    assert "## What is left\n\n- [ ] left: check it with grep" in pull["body"]
    assert f"Refs #{number}" in pull["body"]
    assert f"Fixes #{number}" not in pull["body"]
    assert git(origin, "show", f"refs/heads/neo/issue-{number}:README.md") == (
        "# fixture\n\nEdited by Neo."
    )
    (report,) = bot_comments(github, number)
    assert "⚠️ **Incomplete**" in report["body"]
    assert pull["html_url"] in report["body"]
    assert "**Stopped before the end:**" in report["body"]
    assert job.result.pr_url == pull["html_url"]
    # One call of work, then the last word with no tool to call.
    assert len(fake_anthropic.requests) == 2
    assert fake_anthropic.requests[1].body["tool_choice"] == {"type": "none"}
    assert "left: check it with grep" in pull["body"]


async def test_an_unauthorised_commenter_gets_one_short_reply_and_nothing_runs(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.set_permission(REPO, "eve", "read")
    number = github.add_issue(REPO, "Do something")
    first = github.add_comment(REPO, number, "@neo do it", user="eve")
    second = github.add_comment(REPO, number, "@neo do it now", user="eve")
    one = await enqueue(queue, request(number, first, author="eve", delivery="d1"))
    two = await enqueue(queue, request(number, second, author="eve", delivery="d2"))

    w = worker(queue, app, settings)
    await run_until(w, finished(queue, one))
    await run_until(w, finished(queue, two))

    for job_id in (one, two):
        job = await get(queue, job_id)
        assert job.state is JobState.FAILED
        assert job.result is not None
        assert job.result.conclusion is Conclusion.UNAUTHORISED
        assert job.result.error == "unauthorised"
    mine = bot_comments(github, number)
    assert len(mine) == 1
    assert "@eve" in mine[0]["body"]
    assert "write" in mine[0]["body"]
    assert len(mine[0]["body"]) < 400
    assert fake_anthropic.requests == []
    assert github.pulls(REPO) == []
    assert github.reactions(REPO) == []


async def test_an_invalid_config_gets_one_comment_naming_the_field_and_nothing_runs(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # Which files are invalid, and the words: tests/bot/worker/test_config.py.
    field = "max_turns"
    github.put_file(REPO, ".github/neo.yml", "max_turns: lots\nmodel: [a]\n")
    settings = settings.model_copy(update={"docs_url": "https://docs.example/neo/docs"})
    number = github.add_issue(REPO, "Do something")
    comment = github.add_comment(REPO, number, "@neo do it", user="mona")
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    error = str(job.result.error)
    assert error.startswith(f".github/neo.yml: {field}: ")
    assert error.endswith(" (and 1 more problem)")
    assert "\n" not in error
    assert "internal error" not in error
    [mine] = bot_comments(github, number)
    assert "Neo did not run" in mine["body"]
    # Every problem, and the reference at the operator's absolute URL.
    assert f"- Line 1, `{field}`: " in mine["body"]
    assert "- Line 2, `model`: " in mine["body"]
    assert "(https://docs.example/neo/docs/configuration.md)" in mine["body"]
    assert "internal error" not in mine["body"]
    assert fake_anthropic.requests == []
    assert github.pulls(REPO) == []


@pytest.mark.parametrize(
    ("config", "line"),
    [
        (
            "provider: openai\n",
            "Neo did not run: the provider `openai` (from `.github/neo.yml`) is not offered by"
            " this Neo service: it has no `OPENAI_API_KEY`. Ask the operator to set it, or"
            " choose one of: anthropic.",
        ),
        (
            "fallback:\n  provider: google\n",
            "Neo did not run: the fallback provider `google` (from `.github/neo.yml`) is not"
            " offered by this Neo service: it has no `GEMINI_API_KEY`. Ask the operator to set"
            " it, or choose one of: anthropic.",
        ),
    ],
    ids=["provider", "fallback"],
)
async def test_a_provider_the_service_has_no_key_for_gets_one_comment_and_nothing_runs(
    config: str,
    line: str,
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NEO_HOME", str(tmp_path / "home"))
    github.put_file(REPO, ".github/neo.yml", config)
    number = github.add_issue(REPO, "Do something")
    comment = github.add_comment(REPO, number, "@neo do it", user="mona")
    job_id = await enqueue(queue, request(number, comment))

    w = worker(queue, app, settings)
    await run_until(w, finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error == line
    # One comment, that line; no progress comment, reaction, token, clone or model call.
    [mine] = bot_comments(github, number)
    assert mine["body"].splitlines()[-1] == line
    assert fake_anthropic.requests == []
    assert git_server.requests == []
    assert github.reactions(REPO) == []
    assert github.pulls(REPO) == []
    assert fake_anthropic.api_key is not None
    assert fake_anthropic.api_key not in mine["body"]

    # The job run again (`neo jobs retry`) finds its comment rather than say it twice.
    assert await queue.retry(job_id)
    await run_until(w, finished(queue, job_id))
    assert [c["id"] for c in bot_comments(github, number)] == [mine["id"]]


async def test_a_sandbox_image_missing_on_the_host_fails_the_job_with_one_line(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.put_file(REPO, ".github/neo.yml", "sandbox_image: neo-no-such-image:never\n")
    number = github.add_issue(REPO, "Do something")
    comment = github.add_comment(REPO, number, "@neo do it", user="mona")
    job_id = await enqueue(queue, request(number, comment))
    docker_settings = settings.model_copy(update={"sandbox": "docker"})

    await run_until(worker(queue, app, docker_settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error == (
        "config_error: sandbox image neo-no-such-image:never not found locally (build it "
        "with scripts/build-images, or choose another with sandbox_image in .github/neo.yml "
        "or NEO_SANDBOX_IMAGE)"
    )
    [report] = bot_comments(github, number)
    assert "neo-no-such-image:never not found locally" in report["body"]
    assert "internal error" not in report["body"]
    assert str(settings.data_dir) not in report["body"]
    assert fake_anthropic.requests == []


async def test_a_failing_setup_command_is_reported_with_its_last_lines(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # The error's one line said which command, not why: the reader had nothing to fix.
    command = "echo Resolving foo; echo 'ERROR: no version of foo>=9' >&2; exit 3"
    github.put_file(REPO, ".github/neo.yml", f"setup:\n  - 'true'\n  - {json.dumps(command)}\n")

    number, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.FAILED
    [report] = bot_comments(github, number)
    body = report["body"]
    assert "❌ **Setup failed:** `echo Resolving foo;" in body
    assert "(`setup` in `.github/neo.yml`): exit code 3." in body
    assert "```text\nResolving foo\nERROR: no version of foo>=9\n```" in body
    assert fake_anthropic.requests == []


class _DiesBeforeFinishing:
    """The queue, as seen by a worker whose process dies just before `finish`."""

    def __init__(self, queue: SqliteQueue) -> None:
        self._queue = queue
        self.died = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    async def finish(self, *args: Any, **kwargs: Any) -> None:
        self.died = True


async def test_a_job_whose_worker_died_after_its_report_is_closed_by_it_not_run_again(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
    clock: _Clock,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line", user="mona")
    script_edit(fake_anthropic)
    script_edit(fake_anthropic)
    job_id = await enqueue(queue, request(number, comment))
    dying = _DiesBeforeFinishing(queue)

    async def died() -> bool:
        return dying.died

    await run_until(worker(dying, app, settings, name="first"), died)
    assert (await get(queue, job_id)).state is JobState.RUNNING
    calls = len(fake_anthropic.requests)
    [report] = bot_comments(github, number)
    clock.now += LEASE + 1  # nobody heartbeats the dead worker's lease

    await run_until(worker(queue, app, settings, name="second"), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.attempts == 2
    # The second attempt found the first one's report: it ran nothing, pushed
    # nothing and left the report as it was; the queue has what the report says.
    assert len(fake_anthropic.requests) == calls
    assert bot_comments(github, number) == [report]
    assert len(github.pulls(REPO)) == 1
    log = git(origin, "log", "--format=%s", f"refs/heads/neo/issue-{number}")
    assert len(log.splitlines()) == 2
    assert job.result is not None
    assert job.result.conclusion is Conclusion.SUCCESS
    assert job.result.pr_url == github.pulls(REPO)[0]["html_url"]
    assert job.result.report is not None
    assert "**Done**" in job.result.report
    [line] = await queue.spend(0.0)
    assert (line.jobs, line.cost_usd) == (1, job.result.cost_usd)


async def test_a_stop_request_cancels_the_running_job_and_the_report_says_who(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Take your time", user="mona")
    comment = github.add_comment(REPO, number, "@neo think hard", user="mona")
    fake_anthropic.script(Stall(30.0))
    job_id = await enqueue(queue, request(number, comment))
    stop_comment = github.add_comment(REPO, number, "@neo stop", user="mona")

    async def started_then_stop() -> bool:
        if fake_anthropic.requests and not (await get(queue, job_id)).cancel_requested:
            cancel = replace(
                request(number, stop_comment, delivery="d-stop"),
                kind=JobKind.STOP,
                instruction="@neo stop",
            )
            await queue.enqueue("d-stop", [cancel])
        return bool(await finished(queue, job_id)())

    await run_until(worker(queue, app, settings), started_then_stop, timeout=20)

    job = await get(queue, job_id)
    assert job.state is JobState.CANCELLED, job.result
    assert job.result is not None
    assert job.result.cancelled_by == "mona"
    stops = [e.data for e in await queue.events_after(job_id, 0) if e.kind == "stop"]
    assert stops == [{"by": "mona"}]  # the run page's log says who, too
    mine = bot_comments(github, number)
    assert len(mine) == 1
    assert "Cancelled" in mine[0]["body"]
    assert "mona" in mine[0]["body"]
    assert github.pulls(REPO) == []


async def test_a_job_past_neo_job_timeout_is_stopped_and_fails_with_one_line(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Never ends", user="mona")
    comment = github.add_comment(REPO, number, "@neo think for ever", user="mona")
    # A model that does not answer: the run is hung, its worker alive and beating.
    fake_anthropic.script(Stall(60.0))
    job_id = await enqueue(queue, request(number, comment))

    await run_until(worker(queue, app, settings, job_timeout=1.0), finished(queue, job_id), 40)

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED, job.result
    assert job.result is not None
    assert job.result.error == "the job ran longer than NEO_JOB_TIMEOUT (1 s)"
    mine = bot_comments(github, number)
    assert len(mine) == 1
    assert "the job ran longer than NEO_JOB_TIMEOUT (1 s)" in mine[0]["body"]
    assert github.pulls(REPO) == []


async def test_a_stop_request_from_someone_who_may_not_run_neo_is_refused_and_the_job_goes_on(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # Who may stop a job: the rule that decides who may start one, with the file's
    # `allowed_users` (the rule's rows: tests/bot/worker/test_access.py). Here a
    # writer where only admins run.
    stopper = "walt"
    github.set_permission(REPO, "mona", "admin")
    github.set_permission(REPO, stopper, "write")
    github.put_file(REPO, ".github/neo.yml", "allowed_users: [admin]\n")
    number = github.add_issue(REPO, "Take your time", user="mona")
    comment = github.add_comment(REPO, number, "@neo think hard", user="mona")
    # Slow enough that the stop request is decided while the run is going on.
    fake_anthropic.script(Stall(3.0, reply=Reply([text("Thought it through.")])))
    job_id = await enqueue(queue, request(number, comment))
    stop_comment = github.add_comment(REPO, number, "@neo stop", user=stopper)
    stop = replace(
        request(number, stop_comment, author=stopper, delivery="d-stop"),
        kind=JobKind.STOP,
        instruction="@neo stop",
        author_association="NONE",
    )
    stop_id: int | None = None

    async def decided_then_finished() -> bool:
        nonlocal stop_id
        if stop_id is None and fake_anthropic.requests:
            stop_id = await enqueue(queue, stop)
        if stop_id is None or not await finished(queue, stop_id)():
            return False
        return bool(await finished(queue, job_id)())

    await run_until(worker(queue, app, settings), decided_then_finished, timeout=30)

    assert stop_id is not None
    refused = await get(queue, stop_id)
    assert refused.state is JobState.FAILED
    assert refused.result == JobOutcome(conclusion=Conclusion.UNAUTHORISED, error="unauthorised")
    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.cancel_requested is False
    assert job.result is not None
    assert job.result.cancelled_by is None
    mine = bot_comments(github, number)
    replies = [c for c in mine if f"@{stopper}" in c["body"]]
    assert len(replies) == 1
    assert "stop" in replies[0]["body"]
    assert "The work goes on" in replies[0]["body"]
    reports = [c for c in mine if c not in replies]
    assert len(reports) == 1
    assert "Cancelled" not in reports[0]["body"]


async def test_a_stop_request_is_decided_while_every_run_slot_is_taken(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Take your time", user="mona")
    comment = github.add_comment(REPO, number, "@neo think hard", user="mona")
    fake_anthropic.script(Stall(30.0))
    job_id = await enqueue(queue, request(number, comment))
    stop_comment = github.add_comment(REPO, number, "@neo stop", user="mona")
    stop = replace(
        request(number, stop_comment, delivery="d-stop"), kind=JobKind.STOP, instruction="@neo stop"
    )
    queued_stop = False

    async def stopped() -> bool:
        nonlocal queued_stop
        if not queued_stop and fake_anthropic.requests:
            await enqueue(queue, stop)
            queued_stop = True
        return bool(await finished(queue, job_id)())

    # One slot, held by the run the stop is about.
    await run_until(worker(queue, app, settings, concurrency=1), stopped, timeout=20)

    job = await get(queue, job_id)
    assert job.state is JobState.CANCELLED, job.result
    assert job.result is not None
    assert job.result.cancelled_by == "mona"


# --- in-process workers of `neo serve`


@pytest.mark.parametrize(
    ("api", "git_url", "expected"),
    [
        ("https://api.github.com", "", "https://github.com"),
        ("https://ghe.example.com/api/v3", "", "https://ghe.example.com"),
        ("https://api.github.com", "http://127.0.0.1:9/", "http://127.0.0.1:9"),
    ],
)
def test_jobs_clone_from_the_git_host_that_goes_with_the_api(
    api: str, git_url: str, expected: str
) -> None:
    settings = load_settings(
        {
            "NEO_GITHUB_APP_ID": "1",
            "NEO_GITHUB_PRIVATE_KEY": "pem",
            "NEO_WEBHOOK_SECRET": "s",
            "NEO_GITHUB_API_URL": api,
            "NEO_GITHUB_GIT_URL": git_url,
        }
    )
    assert settings.git_url == expected


# --- context for the model


def feature_branch(origin: Path) -> str:
    """A branch `feature` with one new file on top of main; its diff against main."""
    git(origin, "branch", "feature", "main")
    add_commit(origin, {"notes.txt": b"hello\nworld\n"}, message="Add notes", branch="feature")
    return git(origin, "diff", "main...feature") + "\n"


HUNK = "@@ -0,0 +1,2 @@\n+hello\n+world"


async def test_a_review_comment_job_gets_the_diff_and_the_comments_file_lines_and_hunk(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    diff = feature_branch(origin)
    number = github.add_pull(
        REPO, "Add notes", "Adds notes.", head="feature", user="mona", diff=diff
    )
    comment = github.add_review_comment(
        REPO,
        number,
        "@neo say goodbye instead",
        user="mona",
        path="notes.txt",
        start_line=1,
        line=2,
        diff_hunk=HUNK,
    )
    fake_anthropic.script(Reply([text("The notes are fine as they are.")]))
    job_request = replace(
        request(number, comment),
        thread=Thread(REPO, number, is_pull_request=True),
        event="pull_request_review_comment.created",
        trigger=TriggerKind("pull_request_review_comment.created"),
        instruction="@neo say goodbye instead",
    )
    job_id = await enqueue(queue, job_request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    prompt = prompt_of(fake_anthropic)
    assert "## The pull request's diff against its base branch" in prompt
    assert 'kind="diff" author="mona"' in prompt
    assert f">\n{diff}\n</data-" in prompt  # whole, verbatim, in its own block
    assert "diff truncated" not in prompt
    assert "The review comment is on lines 1-2 of the new version of the file" in prompt
    assert (
        f'kind="diff_hunk" path="notes.txt" start_line="1" line="2" side="RIGHT">\n{HUNK}\n</data-'
    ) in prompt
    assert "asked Neo in a review comment on this pull request" in prompt
    assert (
        'kind="request" author="mona" association="COLLABORATOR">\n'
        "@neo say goodbye instead\n</data-"
    ) in prompt
    # 👀 on the review comment; the job worked on the PR's own branch: no new PR.
    assert [(r["subject"], r["subject_id"]) for r in github.reactions(REPO)] == [
        ("review_comment", comment)
    ]
    assert len(github.pulls(REPO)) == 1


async def test_a_review_job_gets_its_inline_comments_and_a_big_diff_is_capped(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    feature_branch(origin)
    big = "".join(f"+line {n}\n" for n in range(20_000))
    diff = "diff --git a/big.txt b/big.txt\n--- /dev/null\n+++ b/big.txt\n" + big
    number = github.add_pull(REPO, "Add notes", head="feature", user="mona", diff=diff)
    review = github.add_review(REPO, number, "@neo please address these", user="mona")
    for line, body in ((1, "Say hi"), (2, "Say everyone")):
        github.add_review_comment(
            REPO, number, body, user="mona", path="notes.txt", line=line, review_id=review
        )
    fake_anthropic.script(Reply([text("Nothing to do.")]))
    job_request = replace(
        request(number, review),
        thread=Thread(REPO, number, is_pull_request=True),
        event="pull_request_review.submitted",
        trigger=TriggerKind("pull_request_review.submitted"),
        instruction="@neo please address these",
    )
    job_id = await enqueue(queue, job_request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    prompt = prompt_of(fake_anthropic)
    assert "## The review's inline comments" in prompt
    assert 'path="notes.txt" line="1" side="RIGHT">\nSay hi\n</data-' in prompt
    assert 'path="notes.txt" line="2" side="RIGHT">\nSay everyone\n</data-' in prompt
    assert "asked Neo in a review on this pull request" in prompt
    # The diff's head, and one line saying what was cut.
    assert "+line 0\n" in prompt
    assert "+line 19999\n" not in prompt
    [marker] = [line for line in prompt.splitlines() if line.startswith("[diff truncated:")]
    assert f"of {len(diff.encode()):,} bytes" in marker


async def test_a_diff_github_refuses_is_said_to_be_missing_and_the_job_runs(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    feature_branch(origin)
    number = github.add_pull(REPO, "Add notes", head="feature", user="mona", diff=None)
    comment = github.add_comment(REPO, number, "@neo look", user="mona")
    message = "Sorry, the diff exceeded the maximum number of lines (20000)"
    fake_anthropic.script(Reply([text("Looked.")]))
    job_request = replace(request(number, comment), thread=Thread(REPO, number, True))
    job_id = await enqueue(queue, job_request)

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    assert (await get(queue, job_id)).state is JobState.SUCCEEDED
    prompt = prompt_of(fake_anthropic)
    assert "--- a/" not in prompt
    assert f"[not shown: GitHub did not give it (github 406 GET /repos/{REPO}/pulls/{number}" in (
        prompt
    )
    assert message in prompt


# --- the owner's config


ORG_CONFIG = "octo/.github"


def install_owner_config(github: FakeGitHub, text: str | None) -> None:
    """Install the App on octo/.github too, with `text` as its `.github/neo.yml`."""
    github.install(INSTALLATION, "octo", ["hello", ".github"])
    if text is not None:
        github.put_file(ORG_CONFIG, ".github/neo.yml", text)


async def run_one_mention(
    queue: SqliteQueue, app: GitHubApp, settings: Settings, github: FakeGitHub, **options: Any
) -> tuple[int, Job]:
    number = github.add_issue(REPO, "Look around", user="mona")
    comment = github.add_comment(REPO, number, "@neo look around", user="mona")
    job_id = await enqueue(queue, request(number, comment))
    await run_until(worker(queue, app, settings, **options), finished(queue, job_id))
    return number, await get(queue, job_id)


def config_tokens(github: FakeGitHub) -> list[Mapping[str, str] | None]:
    return [r.permissions for r in github.token_requests if r.repositories == (".github",)]


async def test_the_repositorys_config_wins_over_the_owners(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    install_owner_config(github, "model: org-model\nmax_turns: 1\n")
    github.put_file(REPO, ".github/neo.yml", "model: repo-model\n")
    fake_anthropic.script(Reply([text("Looked.")]))

    _, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.SUCCEEDED, job.result
    assert fake_anthropic.requests[0].body["model"] == "repo-model"
    # The owner's file was read, for its budgets alone (tests/hostile/test_budgets.py).
    assert config_tokens(github) == [dict(CONFIG_PERMISSIONS)]


async def test_without_a_repository_config_the_owners_is_read_with_a_read_only_token(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    install_owner_config(github, "model: org-model\n")
    github.set_default_branch(ORG_CONFIG, "trunk")
    github.put_file(ORG_CONFIG, ".github/neo.yml", "model: org-trunk-model\n", ref="trunk")
    fake_anthropic.script(Reply([text("Looked.")]))

    _, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.SUCCEEDED, job.result
    # From the owner's repository's default branch.
    assert fake_anthropic.requests[0].body["model"] == "org-trunk-model"
    assert config_tokens(github) == [dict(CONFIG_PERMISSIONS)]


@pytest.mark.parametrize("installed_there", [True, False])
async def test_without_any_config_the_defaults_apply_silently(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    installed_there: bool,
) -> None:
    if installed_there:
        install_owner_config(github, None)
    fake_anthropic.script(Reply([text("Looked.")]))

    number, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.SUCCEEDED, job.result
    assert fake_anthropic.requests[0].body["model"] != "org-model"
    assert len(config_tokens(github)) == 1  # asked for; refused (422) when not installed
    [comment] = bot_comments(github, number)
    assert "**Done**" in comment["body"]


async def test_an_invalid_owner_config_gets_one_comment_naming_the_field_and_file(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    install_owner_config(github, "max_turns: lots\n")

    number, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.FAILED
    [comment] = bot_comments(github, number)
    assert "Neo did not run" in comment["body"]
    assert "max_turns" in comment["body"]
    assert "octo/.github:.github/neo.yml" in comment["body"]
    assert fake_anthropic.requests == []


# --- another settings file, and overrides on top (what `neo action`'s inputs set)


@pytest.mark.parametrize(
    ("in_repository", "model"),
    [(True, "repo-ci-model"), (False, "owner-ci-model")],
    ids=["repository", "owner"],
)
async def test_the_worker_reads_its_config_path_in_the_repository_or_else_the_owners(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    in_repository: bool,
    model: str,
) -> None:
    github.put_file(REPO, ".github/neo.yml", "model: default-path-model\n")
    install_owner_config(github, "model: owner-default-path-model\n")
    github.put_file(ORG_CONFIG, "ci/neo.yml", "model: owner-ci-model\n")
    if in_repository:
        github.put_file(REPO, "ci/neo.yml", "model: repo-ci-model\n")
    fake_anthropic.script(Reply([text("Looked.")]))
    number = github.add_issue(REPO, "Look around", user="mona")
    comment = github.add_comment(REPO, number, "@neo look around", user="mona")
    job_id = await enqueue(queue, request(number, comment))

    w = worker(queue, app, settings, config_path="/ci/neo.yml")
    await run_until(w, finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert fake_anthropic.requests[0].body["model"] == model


async def test_an_invalid_file_at_the_config_path_is_named_in_the_comment(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.put_file(REPO, "ci/neo.yml", "max_turns: lots\n")

    number, job = await run_one_mention(queue, app, settings, github, config_path="ci/neo.yml")

    assert job.state is JobState.FAILED
    [mine] = bot_comments(github, number)
    assert "`ci/neo.yml`" in mine["body"]
    assert "max_turns" in mine["body"]
    assert fake_anthropic.requests == []


async def test_an_allowed_users_override_decides_who_may_run_neo(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # Narrowed: mona may write, which the file allows and the override does not.
    # Widened, and the rule: rows of test_config.py and test_access.py.
    github.put_file(REPO, ".github/neo.yml", "allowed_users: [maintain, write]\n")
    number = github.add_issue(REPO, "Look around", user="mona")
    comment = github.add_comment(REPO, number, "@neo look around", user="mona")
    job_id = await enqueue(queue, request(number, comment))
    overrides = {"allowed_users": ("admin",)}

    w = worker(
        queue,
        app,
        settings,
        config_overrides=overrides,
        overrides_source="the workflow's inputs",
    )
    await run_until(w, finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.error == "unauthorised"
    assert fake_anthropic.requests == []
    [mine] = bot_comments(github, number)
    assert "Neo only works for people with admin access" in mine["body"]
    assert "set by `allowed_users` in the workflow's inputs" in mine["body"]


# --- a job the queue gives up on


class _Hung:
    """The queue, as seen by a worker that hangs: its heartbeats never arrive."""

    def __init__(self, queue: SqliteQueue) -> None:
        self._queue = queue

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    async def heartbeat(self, *args: Any, **kwargs: Any) -> Heartbeat:
        return Heartbeat(lease_lost=False)


async def test_a_job_whose_lease_expires_on_its_last_attempt_ends_with_its_comment_failed(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    clock: _Clock,
) -> None:
    number = github.add_issue(REPO, "Take your time", user="mona")
    comment = github.add_comment(REPO, number, "@neo think hard", user="mona")
    fake_anthropic.script(Stall(30.0))
    job_id = await enqueue(queue, request(number, comment))
    # Two attempts whose workers died before they posted anything.
    for _ in range(2):
        assert (await queue.claim("ghost", LEASE)) is not None
        clock.now += LEASE + 1
        assert await queue.requeue_expired() == [job_id]

    # The last attempt posts its progress comment, then its worker hangs and is killed.
    stop = asyncio.Event()
    hung = asyncio.create_task(worker(_Hung(queue), app, settings, name="hung").run(stop))
    deadline = time.monotonic() + 60
    while not (fake_anthropic.requests and bot_comments(github, number)):
        assert time.monotonic() < deadline, "the last attempt did not start"
        await asyncio.sleep(0.05)
    killed = [t for t in asyncio.all_tasks() if t.get_name() == f"neo-job-{job_id}"]
    for task in [*killed, hung]:
        task.cancel()
    await asyncio.gather(*killed, hung, return_exceptions=True)
    assert (await get(queue, job_id)).attempts == 3
    clock.now += LEASE + 1

    async def reported() -> bool:
        return "Failed" in bot_comments(github, number)[0]["body"]

    await run_until(worker(queue, app, settings, name="next"), reported)

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    [mine] = bot_comments(github, number)
    body = mine["body"]
    assert body.startswith(job_marker(job_id))
    assert "❌ **Failed**" in body
    assert (
        "**Error:** Gave up after 3 attempts: each time the worker's lease expired before it"
        " finished. Nothing more will be pushed for this request; mention Neo again to retry."
    ) in body
    creates = [r for r in github.requests if r.method == "POST" and r.path.endswith("/comments")]
    assert len(creates) == 1
    assert len(fake_anthropic.requests) == 1  # nothing ran again


# --- follow-ups


async def test_a_follow_up_mention_continues_the_session_on_the_same_branch_and_pr(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    first = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    one = await enqueue(queue, request(number, first, delivery="d1"))
    w = worker(queue, app, settings)
    await run_until(w, finished(queue, one))
    assert (await get(queue, one)).state is JobState.SUCCEEDED
    asked = len(fake_anthropic.requests)
    first_conversation = conversation(fake_anthropic, asked - 1)

    second = github.add_comment(REPO, number, "@neo also say goodbye", user="mona")
    fake_anthropic.script(
        Reply(
            [
                tool_use(
                    "t3",
                    "edit_file",
                    {
                        "path": "README.md",
                        "old_string": "Edited by Neo.\n",
                        "new_string": "Edited by Neo.\nGoodbye.\n",
                    },
                )
            ],
            "tool_use",
        ),
        Reply([text("Added a goodbye.")]),
    )
    follow_up = replace(request(number, second, delivery="d2"), instruction="@neo also say goodbye")
    two = await enqueue(queue, follow_up)
    await run_until(w, finished(queue, two))

    job = await get(queue, two)
    assert job.state is JobState.SUCCEEDED, job.result
    # The second run's first request holds the whole first conversation, then the new task.
    resumed = conversation(fake_anthropic, asked)
    assert resumed[: len(first_conversation)] == first_conversation
    # ...and its final answer.
    assert "Added a line to README.md" in str(resumed[len(first_conversation)])
    assert "also say goodbye" in str(resumed[-1])
    assert "also say goodbye" not in str(first_conversation)
    # The same branch, one more commit, and the same (one) pull request.
    pulls = github.pulls(REPO)
    assert len(pulls) == 1
    assert pulls[0]["head"]["ref"] == f"neo/issue-{number}"
    assert job.result is not None
    assert job.result.pr_url == pulls[0]["html_url"]
    branch = f"refs/heads/neo/issue-{number}"
    assert len(git(origin, "log", "--format=%s", branch).splitlines()) == 3
    assert git(origin, "show", f"{branch}:README.md") == "# fixture\n\nEdited by Neo.\nGoodbye."
    # Each job has its own comment, each turned into its report.
    mine = bot_comments(github, number)
    assert [c["body"].split("\n", 1)[0] for c in mine] == [job_marker(one), job_marker(two)]
    assert all("**Done**" in c["body"] for c in mine)


# --- GitHub's secondary rate limit


class _Waits:
    """The RepoClient's sleep: records how long it was asked to wait, and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_a_secondary_rate_limit_is_waited_out_and_the_job_still_makes_one_of_each(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # On the pull request's create, the job's last effect. The progress comment's:
    # tests/bot/github/test_client.py; the wait's rows: tests/bot/github/test_core.py.
    method, path = "POST", "/repos/{owner}/{repo}/pulls"
    number = github.add_issue(REPO, "Say hello in the README", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    script_edit(fake_anthropic)
    github.fail_next(method, path, 403, headers={"retry-after": "1"})
    job_id = await enqueue(queue, request(number, comment))
    waits = _Waits()

    w = worker(queue, app, settings, client_options={"sleep": waits})
    await run_until(w, finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert len(github.pulls(REPO)) == 1
    [report] = bot_comments(github, number)
    assert "**Done**" in report["body"]
    suffix = "/pulls"
    answers = [r.status for r in github.requests if r.method == method and r.route.endswith(suffix)]
    assert answers == [403, 201]
    refused = next(r for r in github.requests if r.status == 403)
    assert refused.route.endswith(suffix)
    assert waits.waits == [1.0]  # what retry-after asked for, once


# --- jobs without a thread (schedules, `neo action` on workflow_dispatch)


SCHEDULES = """\
schedules:
  - name: Docs
    cron: "0 6 * * MON"
    prompt: |
      Add a line to the README.
      Keep it short.
"""


def scheduled(github: FakeGitHub, week: int) -> JobRequest:
    """What the scheduler queues for the Docs schedule's slot of `week`."""
    from datetime import UTC, datetime, timedelta

    from bot.config import parse_repo_config
    from bot.intake.schedules import scheduled_request

    slot = datetime(2024, 1, 1, 6, tzinfo=UTC) + timedelta(weeks=week)
    return scheduled_request(
        repository=REPO,
        installation_id=INSTALLATION,
        config=parse_repo_config(SCHEDULES),
        index=0,
        slot=slot,
        author=github.bot_login,
    )


def script_line(fake: FakeAnthropicAPI, call: str, old: str, new: str) -> None:
    """One run of the model: replace `old` by `new` in the README, then say so."""
    edit = {"path": "README.md", "old_string": old, "new_string": new}
    fake.script(
        Reply([tool_use(call, "edit_file", edit)], "tool_use"),
        Reply([text(f"README now ends with {new.splitlines()[-1]!r}.")]),
    )


async def test_two_runs_of_a_schedule_share_its_branch_and_its_one_draft_pr(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.put_file(REPO, ".github/neo.yml", SCHEDULES)
    first, second = scheduled(github, 0), scheduled(github, 1)
    assert first.thread.number == 0
    assert first.branch == "neo/schedule-docs"
    script_line(fake_anthropic, "a1", "# fixture\n", "# fixture\n\nWeek one.\n")
    w = worker(queue, app, settings)

    one = await enqueue(queue, first)
    await run_until(w, finished(queue, one))
    asked = len(fake_anthropic.requests)
    script_line(fake_anthropic, "b1", "Week one.\n", "Week one.\nWeek two.\n")
    two = await enqueue(queue, second)
    await run_until(w, finished(queue, two))

    jobs = [await get(queue, one), await get(queue, two)]
    for job in jobs:
        assert job.state is JobState.SUCCEEDED, job.result
        assert job.result is not None
        assert set(job.result.to_json()) >= RESULT_KEYS
        assert job.result.conclusion == "success"
        assert job.result.branch == "neo/schedule-docs"
        assert job.result.error is None
        assert "**Done**" in str(job.result.report)
        assert str(job.result.pr_url) in str(job.result.report)
    # One pull request for the schedule, from its branch, told by the latest run.
    [pull] = github.pulls(REPO)
    assert jobs[0].result is not None
    assert jobs[1].result is not None
    assert jobs[0].result.pr_url == jobs[1].result.pr_url == pull["html_url"]
    assert pull["head"]["ref"] == "neo/schedule-docs"
    assert pull["base"]["ref"] == "main"
    assert pull["draft"] is True
    # The first run's change named it; the second keeps the title it has.
    assert pull["title"] == "README now ends with 'Week one.'"
    assert "Fixes" not in pull["body"]
    assert "on a schedule" in pull["body"]
    assert "> Add a line to the README." in pull["body"]
    assert "Week two" in pull["body"]
    # The second run continued the branch the first one pushed.
    branch = "refs/heads/neo/schedule-docs"
    assert git(origin, "rev-list", "--count", f"main..{branch}") == "2"
    assert git(origin, "show", f"{branch}:README.md") == "# fixture\n\nWeek one.\nWeek two."
    message = git(origin, "log", "-1", "--format=%B", branch)
    assert message.strip() == "README now ends with 'Week two.'"
    assert "Co-authored-by" not in message  # nobody but Neo asked
    # No thread: no comment, no reaction, no permission asked of anyone.
    assert github.comments(REPO) == []
    assert github.reactions(REPO) == []
    assert not [r for r in github.requests if "/collaborators/" in r.path]
    # The prompt is the schedule's, quoted as data; each run starts a fresh session.
    prompt = prompt_of(fake_anthropic, 0)
    assert ">\nAdd a line to the README.\nKeep it short.\n\n</data-" in prompt
    assert "on branch neo/schedule-docs" in prompt
    assert "#0" not in prompt
    assert len(fake_anthropic.requests[asked].body["messages"]) == 1
    assert jobs[0].result.session_id != jobs[1].result.session_id


async def test_a_threadless_job_that_names_a_user_checks_their_permission(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.set_permission(REPO, "eve", "read")
    dispatch = replace(
        scheduled(github, 0),
        event="workflow_dispatch",
        trigger=TriggerKind("workflow_dispatch"),
        trigger_id=0,
        dedupe_key="dispatch:1",
        delivery_id="dispatch:1",
        branch="neo/dispatch",
    )
    refused = await enqueue(queue, replace(dispatch, author="eve"))
    w = worker(queue, app, settings)
    await run_until(w, finished(queue, refused))

    job = await get(queue, refused)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error == "unauthorised"
    assert set(job.result.to_json()) >= RESULT_KEYS
    assert "**Failed**" in str(job.result.report)
    assert fake_anthropic.requests == []
    assert github.comments(REPO) == []
    # Allowed, such a job's pull request body, co-author and prompt name its user:
    # rows of test_texts.py and test_spec.py.


async def test_a_threadless_job_without_a_branch_of_its_own_fails_with_one_line(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # The default branch, and the words: rows of tests/bot/worker/test_spec.py.
    error = "must name the branch to work on"
    job_id = await enqueue(queue, replace(scheduled(github, 0), branch=None))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert str(job.result.error).startswith("config_error: ")
    assert error in str(job.result.error)
    assert "\n" not in str(job.result.error)
    assert error in str(job.result.report)
    assert fake_anthropic.requests == []
    assert github.pulls(REPO) == []


class _WorkflowToken:
    """An `AppAuth` as `neo action` has one: a workflow's token, no App."""

    def __init__(self, github: FakeGitHub, token: InstallationToken) -> None:
        self._github = github
        self._token = token

    async def installation_token(
        self, installation_id: int, repository: str, permissions: Any = None
    ) -> InstallationToken:
        return self._token

    async def installation_client(
        self, installation_id: int, repository: str, permissions: Any = None
    ) -> GitHub[Any]:
        return GitHub(TokenAuthStrategy(self._token.token), base_url=self._github.base_url)

    async def bot_login(self) -> str:
        return self._github.bot_login


async def test_a_workflow_token_in_place_of_the_app_runs_a_job_to_its_pr(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # The token a workflow gets: minted here once, then the App is out of the picture.
    token = await app.installation_token(INSTALLATION, REPO)
    minted = len(github.token_requests)
    script_line(fake_anthropic, "w1", "# fixture\n", "# fixture\n\nFrom a workflow.\n")
    job_id = await enqueue(queue, replace(scheduled(github, 0), branch="neo/workflow"))

    auth: AppAuth = _WorkflowToken(github, token)
    await run_until(worker(queue, auth, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.result is not None
    [pull] = github.pulls(REPO)
    assert job.result.pr_url == pull["html_url"]
    assert len(github.token_requests) == minted


# --- workflow edits need their own permission


@pytest.mark.parametrize("allowed", [False, True])
async def test_the_job_token_asks_for_workflows_only_when_the_config_allows_their_edits(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    allowed: bool,
) -> None:
    github.install(INSTALLATION, "octo", ["hello"], permissions=WITH_WORKFLOWS)
    github.put_file(REPO, ".github/neo.yml", f"allow_workflow_edits: {str(allowed).lower()}\n")
    fake_anthropic.script(Reply([text("Looked.")]))

    _, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.SUCCEEDED, job.result
    asked = [r.permissions for r in github.token_requests if r.repositories == ("hello",)]
    wanted = dict(WORKFLOW_JOB_PERMISSIONS) if allowed else dict(JOB_PERMISSIONS)
    assert wanted in asked
    assert any(p is not None and "workflows" in p for p in asked) is allowed


async def test_workflow_edits_the_installation_does_not_grant_fail_with_a_line_naming_them(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.put_file(REPO, ".github/neo.yml", "allow_workflow_edits: true\n")

    number, job = await run_one_mention(queue, app, settings, github)

    assert job.state is JobState.FAILED
    assert job.result is not None
    assert "workflows write" in str(job.result.error)
    assert fake_anthropic.requests == []
    [mine] = bot_comments(github, number)
    assert "workflows write" in mine["body"]


# --- the owner's `.github` that the App cannot read


async def test_an_owner_repository_the_app_cannot_read_is_not_asked_again_for_a_while(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
    clock: _Clock,
) -> None:
    fake_anthropic.script(Reply([text("Looked.")]), Reply([text("Looked again.")]))
    fake_anthropic.script(Reply([text("And again.")]))
    w = worker(queue, app, settings, clock=clock)
    for n in range(3):
        if n == 2:
            clock.now += OWNER_CONFIG_TTL + 1
        number = github.add_issue(REPO, "Look around", user="mona")
        comment = github.add_comment(REPO, number, "@neo look around", user="mona")
        job_id = await enqueue(queue, request(number, comment, delivery=f"d{n}"))
        await run_until(w, finished(queue, job_id))
        assert (await get(queue, job_id)).state is JobState.SUCCEEDED
        # Refused (422) for the first job, remembered for the second, asked again after.
        assert len(config_tokens(github)) == (1 if n < 2 else 2)


# --- speed: no poll to wait for, and a mirror cache that outlives jobs


class _CountsClaims:
    """The queue, counting the worker's claims."""

    def __init__(self, queue: SqliteQueue) -> None:
        self._queue = queue
        self.claims = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    async def claim(self, worker: str, lease: float, *, only: Lane | None = None) -> Job | None:
        self.claims += 1
        return await self._queue.claim(worker, lease, only=only)


async def test_a_job_queued_in_the_process_is_claimed_without_waiting_for_a_poll(
    tmp_path: Path,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    fake_anthropic.script(Reply([text("Looked.")]))
    async with SqliteQueue(tmp_path / "woken.db") as inner:
        counted = _CountsClaims(inner)
        queue = WakingQueue(cast("JobQueue", counted))
        # Polls an hour apart: only the wake-up can start the job within the test.
        w = worker(queue, app, settings, poll_every=3600.0, wakeup=queue.queued)
        stop = asyncio.Event()
        task = asyncio.create_task(w.run(stop))
        try:
            while not counted.claims:  # the worker's first poll, which finds nothing
                assert not task.done(), task  # a worker that died never polls
                await asyncio.sleep(0.01)
            number = github.add_issue(REPO, "Look around", user="mona")
            comment = github.add_comment(REPO, number, "@neo look around", user="mona")
            queued = await queue.enqueue("d1", [request(number, comment)])
            (job_id,) = queued.job_ids
            done = finished(inner, job_id)
            deadline = time.monotonic() + 60
            while not await done():
                assert not task.done(), task
                assert time.monotonic() < deadline, "the wake-up did not start the job"
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
        assert (await get(inner, job_id)).state is JobState.SUCCEEDED


async def test_jobs_of_a_worker_share_its_mirror_cache_and_take_its_spare_trees(
    tmp_path: Path,
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    url = f"{settings.git_url}/{REPO}.git"
    fake_anthropic.script(Reply([text("Looked.")]), Reply([text("Looked again.")]))
    async with MirrorCache(settings.data_dir / "mirrors") as mirrors:
        w = worker(queue, app, settings, mirrors=mirrors)
        inodes = []
        for n in range(2):
            number = github.add_issue(REPO, "Look around", user="mona")
            comment = github.add_comment(REPO, number, "@neo look around", user="mona")
            job_id = await enqueue(queue, request(number, comment, delivery=f"d{n}"))
            await run_until(w, finished(queue, job_id))
            assert (await get(queue, job_id)).state is JobState.SUCCEEDED
            await mirrors.wait_idle()
            inodes.append(mirrors.spare_path(url).stat().st_ino)
    # The second job took the spare the first one left, and left a new one.
    assert inodes[0] != inodes[1]


# --- skills


RELEASE_NOTES_SKILL = b"""---
name: release-notes
description: Our release notes, in CHANGES.md.
---
Group the changes under Added and Fixed, and link each pull request.
"""


async def test_a_mention_invoking_a_repository_skill_puts_its_body_in_the_first_message(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    origin: Path,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    add_commit(origin, {".neo/skills/release-notes/SKILL.md": RELEASE_NOTES_SKILL})
    number = github.add_issue(REPO, "Release 1.2", "Time for a release.", user="mona")
    github.add_comment(REPO, number, "/fix-ci would help too", user="octocat")
    ask = "@neo $release-notes for 1.2, and mind $5 and docs/$fix-ci"
    comment = github.add_comment(REPO, number, ask, user="mona")
    fake_anthropic.script(
        Reply([tool_use("t1", "read_file", {"path": "/neo/skills/fix-ci/SKILL.md"})], "tool_use"),
        Reply([text("Nothing to release yet.")]),
    )
    job_id = await enqueue(queue, replace(request(number, comment), instruction=ask))

    await run_until(worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.SUCCEEDED, job.result
    assert job.result is not None
    first = prompt_of(fake_anthropic)
    # The repository's skill, not the built-in of the same name; the path-like
    # `docs/$fix-ci` invokes nothing.
    assert "Group the changes under Added and Fixed" in first
    assert '<skill name="release-notes">' in first
    assert "Keep a Changelog" not in first
    # Another's comment is quoted in the task, and invokes nothing.
    assert "/fix-ci would help too" in first
    assert '<skill name="fix-ci">' not in first
    system = "".join(block["text"] for block in fake_anthropic.requests[0].body["system"])
    assert (
        "- release-notes — Our release notes, in CHANGES.md."
        " (.neo/skills/release-notes/SKILL.md)" in system
    )
    assert "(/neo/skills/fix-ci/SKILL.md)" in system
    # A built-in's virtual path is readable, and nothing of it reaches the tree.
    result = conversation(fake_anthropic, 1)[-1]["content"][0]
    assert "Fixing a failing CI run" in str(result["content"])
    assert not result.get("is_error")
    report = bot_comments(github, number)[0]["body"]
    assert "**Skills:** `release-notes`" in report
    session = (settings.data_dir / "sessions" / f"{job.result.session_id}.jsonl").read_text()
    assert json.loads(session.splitlines()[0])["skills"] == ["release-notes"]
