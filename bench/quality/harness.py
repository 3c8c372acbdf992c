"""Running Neo on a task exactly as a job would, then grading what it pushed.

The task's bundle becomes a bare repository behind a git smart-HTTP server on
loopback (the one the tests use against the real `git`), and the issue a
thread of repository `bench/<id>`. The worker's own `job_spec` turns them,
with the repository configuration's defaults, into the runner's spec, and
`runner.job.run` does the rest: clone on the host, the docker sandbox, the
agent, the commit and the push. Grading then checks out the pushed branch (or
the base, when nothing was pushed) in a new tree and runs the hidden tests
in a fresh sandbox.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.quality.gitops import BenchGitError, checkout_bundle, git
from bench.quality.results import Grade, grade
from bench.quality.taskset import Task
from bench.quality.testrun import run_hidden_tests
from bot.config import RepoConfig
from bot.config.docs import DEFAULT_DOCS_URL
from bot.jobs import Job, JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.worker.prompt import Post
from bot.worker.spec import Identity, ThreadContext, job_spec
from runner.job import JobResult, JobSpec, run
from runner.llm.price_book import Price
from runner.llm.provider import Provider
from runner.mcp import Operator
from runner.network import NetworkPolicy
from runner.sandbox.base import SandboxError
from runner.sandbox.requests import Bounds
from runner.text import one_line
from tests.fakes.git_server import FakeGitServer

__all__ = ["BenchSettings", "Remote", "TaskResult", "run_task"]

_OWNER = "bench"
_BOT = "neo[bot]"


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """What the worker reads of the service's settings (`WorkerSettings`), for the benchmark."""

    data_dir: Path
    git_url: str
    sandbox_image: str
    sandbox: str = "docker"
    allowed_bots: frozenset[str] = frozenset()
    network_ceiling: NetworkPolicy | None = None
    mcp_operator: Operator = field(default_factory=Operator)
    docs_url: str = DEFAULT_DOCS_URL
    operator_prices: Mapping[str, Price] = field(default_factory=dict)
    public_url: str = ""

    def prepared_bounds(self) -> Bounds:
        """The prepared environments kept between tasks and runs: the service's default."""
        return Bounds()


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One task's run and grade: what the report prints."""

    id: str
    language: str
    resolved: bool
    conclusion: str
    turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    # Wall time of the job (clone to push), and of the grading after it.
    run_seconds: float
    grade_seconds: float
    error: str | None = None
    fail_to_pass_failed: tuple[str, ...] = field(default=())
    pass_to_pass_failed: tuple[str, ...] = field(default=())


class Remote:
    """The tasks' repositories as bare repositories behind a git server on loopback."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._server = FakeGitServer(root, token="neo-bench")

    @property
    def token(self) -> str:
        return self._server.token

    @property
    def git_url(self) -> str:
        return self._server.base_url

    def path(self, task: Task) -> Path:
        return self.root / _OWNER / f"{task.id}.git"

    async def add(self, task: Task) -> None:
        """Serve `task`'s bundle as repository bench/<id>, fresh."""
        bare = self.path(task)
        bare.parent.mkdir(parents=True, exist_ok=True)
        await git("clone", "--quiet", "--bare", str(task.bundle), str(bare), cwd=bare.parent)

    @contextlib.contextmanager
    def serving(self) -> Iterator[Remote]:
        with self._server:
            yield self


def _spec_for(
    task: Task, number: int, config: RepoConfig, settings: BenchSettings, token: str
) -> JobSpec:
    thread = Thread(f"{_OWNER}/{task.id}", 1)
    request = JobRequest(
        kind=JobKind.TASK,
        thread=thread,
        installation_id=None,
        event="issues.opened",
        trigger=TriggerKind("issues.opened"),
        trigger_id=1,
        author="bench",
        author_association="OWNER",
        instruction=task.body,
        dedupe_key=f"bench-{task.id}-{number}",
        delivery_id=f"bench-{number}",
    )
    now = time.time()
    job = Job(number, request, JobState.RUNNING, 1, now, now)
    context = ThreadContext(
        title=task.title,
        opening=Post(author="bench", association="OWNER", body=task.body),
        comments=(),
        requester_id=None,
    )
    spec, _ = job_spec(
        job,
        config,
        settings,
        default_branch="main",
        thread=context,
        who=Identity(bot=_BOT, token=token),
    )
    return spec


async def run_task(
    task: Task,
    number: int,
    *,
    remote: Remote,
    config: RepoConfig,
    image: str,
    workdir: Path,
    provider_factory: Callable[..., Provider],
) -> TaskResult:
    """Run job `number` on `task` through the runner, then grade its branch."""
    await remote.add(task)
    settings = BenchSettings(data_dir=workdir / "data", git_url=remote.git_url, sandbox_image=image)
    spec = _spec_for(task, number, config, settings, remote.token)
    started = time.monotonic()
    result = await run(spec, provider_factory=provider_factory)
    run_seconds = time.monotonic() - started
    started = time.monotonic()
    try:
        outcome = await _grade(task, number, result, remote, image, spec.work_branch)
    except (BenchGitError, SandboxError) as error:
        outcome = None
        grade_error: str | None = f"grading failed: {one_line(error)}"
    else:
        grade_error = None
    grade_seconds = time.monotonic() - started
    failure = result.error_message and f"{result.error_kind}: {result.error_message}"
    return TaskResult(
        id=task.id,
        language=task.language,
        resolved=outcome is not None and outcome.resolved,
        conclusion=result.conclusion,
        turns=result.num_turns,
        input_tokens=result.usage.input_tokens
        + result.usage.cache_creation_input_tokens
        + result.usage.cache_read_input_tokens,
        output_tokens=result.usage.output_tokens,
        cost_usd=result.cost_usd,
        run_seconds=run_seconds,
        grade_seconds=grade_seconds,
        error=grade_error or failure,
        fail_to_pass_failed=outcome.fail_to_pass_failed if outcome else (),
        pass_to_pass_failed=outcome.pass_to_pass_failed if outcome else (),
    )


async def _grade(
    task: Task, number: int, result: JobResult, remote: Remote, image: str, branch: str
) -> Grade:
    with tempfile.TemporaryDirectory(prefix=f"neo-bench-{task.id}-") as scratch:
        tree = Path(scratch) / "tree"
        base = await checkout_bundle(task.bundle, tree)
        if result.commit is not None:
            # What the job pushed, read back from the remote as a reviewer would.
            await git("fetch", "--quiet", str(remote.path(task)), branch, cwd=tree)
            await git("checkout", "--quiet", "--detach", result.commit, cwd=tree)
        run = await run_hidden_tests(task, tree, base, image=image, name=f"bench-grade-{number}")
    return grade(run.outcomes, task.spec.fail_to_pass, task.spec.pass_to_pass)
