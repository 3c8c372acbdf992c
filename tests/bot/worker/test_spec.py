"""The job spec's pure parts, from tables: branches, titles, commit messages, addresses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from bot.config import Fallback, RepoConfig
from bot.config.docs import DEFAULT_DOCS_URL
from bot.config.loading import parse_repo_config
from bot.jobs import Job, JobKind, JobRequest, JobState, Thread, TriggerKind
from bot.worker.prompt import Post
from bot.worker.spec import (
    Identity,
    ThreadContext,
    job_spec,
    noreply_email,
    task_title,
    thread_commit,
    threadless_branch,
    work_branch,
)
from runner.errors import ConfigError
from runner.fork import Fork
from runner.llm.price_book import Price
from runner.mcp import Operator
from runner.network import NetworkPolicy
from runner.sandbox.requests import Bounds
from runner.subagent import SubagentSettings

REQUEST = JobRequest(
    kind=JobKind.TASK,
    thread=Thread("octo/hello", 12),
    installation_id=7,
    event="issue_comment.created",
    trigger=TriggerKind("issue_comment.created"),
    trigger_id=1,
    author="mona",
    author_association="MEMBER",
    instruction="@neo fix it",
    dedupe_key="comment:1",
    delivery_id="d1",
)
THREAD = ThreadContext("Fix it", Post(author="mona", association="MEMBER", body=""), (), None)
BOT = "neo-app[bot]"


@dataclass(frozen=True)
class _Settings:
    data_dir: Path = Path("/data")
    sandbox: str = "local"
    sandbox_image: str = "neo-sandbox:local"
    allowed_bots: frozenset[str] = field(default_factory=frozenset)
    git_url: str = "https://github.com"
    network_ceiling: NetworkPolicy | None = None
    mcp_operator: Operator = field(default_factory=Operator)
    docs_url: str = DEFAULT_DOCS_URL
    operator_prices: Mapping[str, Price] = field(default_factory=dict)
    public_url: str = ""

    def prepared_bounds(self) -> Bounds:
        return Bounds(max_entries=3)


def job(request: JobRequest = REQUEST) -> Job:
    return Job(
        id=4, request=request, state=JobState.RUNNING, attempts=1, created_at=0.0, updated_at=0.0
    )


@pytest.mark.parametrize(
    ("is_pull", "head_ref", "same", "expected"),
    [
        (False, None, True, ("neo/issue-12", False, None)),
        (True, "feature", True, ("feature", True, None)),
        # A fork's branch cannot be pushed to: Neo's own, from the pull request.
        (True, "feature", False, ("neo/pr-12", False, 12)),
        (True, None, True, ("neo/pr-12", False, 12)),
    ],
)
def test_a_threads_work_branch(
    is_pull: bool, head_ref: str | None, same: bool, expected: tuple[str, bool, int | None]
) -> None:
    request = replace(REQUEST, thread=Thread("octo/hello", 12, is_pull_request=is_pull))
    thread = replace(THREAD, head_ref=head_ref, same_repository=same)
    assert work_branch(request, thread, "neo/") == expected


@pytest.mark.parametrize(
    ("branch", "message"),
    [
        (None, "must name the branch to work on; none was given"),
        ("  ", "must name the branch to work on; none was given"),
        ("main", "the job's branch 'main' is the default branch"),
    ],
)
def test_a_threadless_job_needs_a_branch_of_its_own(branch: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        threadless_branch(replace(REQUEST, branch=branch), "main")


def test_a_threadless_job_works_on_the_branch_it_names() -> None:
    assert threadless_branch(replace(REQUEST, branch=" neo/docs "), "main") == "neo/docs"


@pytest.mark.parametrize(
    ("instruction", "title"),
    [
        ("\n\n  Update   the docs \nthen more", "Update the docs"),
        ("", ""),
        ("x" * 80, "x" * 71 + "…"),
    ],
)
def test_a_task_title_is_the_first_line_cut_short(instruction: str, title: str) -> None:
    assert task_title(instruction) == title


def test_a_threads_commit_says_the_change_and_refers_to_the_thread() -> None:
    commit = thread_commit("Dates are wrong", 12)
    summary = "Parse dates in UTC in parse_date\n\nThe test failed east of UTC."
    assert commit.message(summary, ["src/dates.py"]) == (
        "Parse dates in UTC in parse_date",
        "Parse dates in UTC in parse_date\n\nRefs #12",
    )
    # A summary line that only repeats the title says what was asked, not done.
    assert commit.message("Dates are wrong.\n\nFixed.", ["src/dates.py"]) == (
        "Change src/dates.py",
        "Change src/dates.py\n\nRefs #12",
    )


@pytest.mark.parametrize(
    ("user_id", "email"),
    [(None, "mona@users.noreply.github.com"), (5, "5+mona@users.noreply.github.com")],
)
def test_the_noreply_address(user_id: int | None, email: str) -> None:
    assert noreply_email("mona", user_id) == email


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (RepoConfig(model="file-model", time_limit=9), ("file-model", 100, 540.0, "neo/issue-12")),
        (
            RepoConfig(model="input-model", max_turns=5, time_limit=3, branch_prefix="ci/"),
            ("input-model", 5, 180.0, "ci/issue-12"),
        ),
    ],
)
def test_the_config_decides_the_model_the_budget_and_the_branch_prefix(
    config: RepoConfig, expected: tuple[str, int, float, str]
) -> None:
    spec, own = job_spec(
        job(), config, _Settings(), default_branch="main", thread=THREAD, who=Identity(BOT, "t")
    )
    # The time limit is in minutes in the file, in seconds for the runner.
    assert (
        spec.settings.model,
        spec.settings.max_turns,
        spec.settings.time_limit,
        spec.work_branch,
    ) == expected
    assert own is False


@pytest.mark.parametrize("auth", ["api_key", "subscription"])
def test_the_config_decides_how_openai_signs_in(auth: str) -> None:
    config = parse_repo_config(f"provider: openai\nopenai_auth: {auth}\n")

    spec, _ = job_spec(
        job(), config, _Settings(), default_branch="main", thread=THREAD, who=Identity(BOT, "t")
    )

    assert (spec.settings.provider, spec.settings.openai_auth) == ("openai", auth)


def test_the_configs_subagents_reach_the_runner() -> None:
    config = parse_repo_config(
        "subagents: {max_parallel: 2, max_children: 5, model: claude-haiku-4-5}\n"
    )

    spec, _ = job_spec(
        job(), config, _Settings(), default_branch="main", thread=THREAD, who=Identity(BOT, "t")
    )

    assert spec.settings.subagents == SubagentSettings(
        max_parallel=2, max_children=5, model="claude-haiku-4-5"
    )
    off = parse_repo_config("subagents: {enabled: false}\n")
    spec, _ = job_spec(
        job(), off, _Settings(), default_branch="main", thread=THREAD, who=Identity(BOT, "t")
    )
    assert spec.settings.subagents.enabled is False


@pytest.mark.parametrize(
    ("is_pull", "same", "kind", "shares"),
    [
        (False, True, JobKind.TASK, True),
        (True, True, JobKind.TASK, True),
        (True, True, JobKind.REVIEW, True),
        # A fork's code runs in setup: the runner keeps no prepared environment
        # of a job on a fork (`JobSpec.fork`), for another job to start from.
        (True, False, JobKind.TASK, False),
        (True, False, JobKind.REVIEW, False),
    ],
)
def test_setup_and_the_prepared_bounds_reach_the_spec_and_a_fork_shares_nothing(
    is_pull: bool, same: bool, kind: JobKind, shares: bool
) -> None:
    request = replace(REQUEST, thread=Thread("octo/hello", 12, is_pull_request=is_pull), kind=kind)
    thread = replace(THREAD, head_ref="feature", same_repository=same)

    spec, _ = job_spec(
        job(request),
        parse_repo_config("setup: [make deps]\n"),
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t"),
    )

    assert (spec.fork is None) is shares
    assert spec.setup == ("make deps",)
    assert spec.environment_bounds == Bounds(max_entries=3)


@pytest.mark.parametrize(
    ("fallback", "expected"),
    [
        (None, None),
        (Fallback(provider="openai", model="gpt-5"), ("openai", "gpt-5")),
        (Fallback(provider="openrouter"), ("openrouter", None)),
    ],
)
def test_the_configs_fallback_reaches_the_runner(
    fallback: Fallback | None, expected: tuple[str, str | None] | None
) -> None:
    spec, _ = job_spec(
        job(),
        RepoConfig(fallback=fallback),
        _Settings(),
        default_branch="main",
        thread=THREAD,
        who=Identity(BOT, "t"),
    )
    assert spec.settings.fallback == expected


@pytest.mark.parametrize(
    ("number", "author", "unchecked", "requester_id", "co_author"),
    [
        (12, "mona", False, 5, ("mona", "5+mona@users.noreply.github.com")),
        # A thread-less job started by a user (`workflow_dispatch`): they co-author.
        (0, "mona", False, None, ("mona", "mona@users.noreply.github.com")),
        # One the repository's own files asked for: nobody but Neo.
        (0, BOT, True, None, None),
        (0, "", True, None, None),
    ],
)
def test_who_co_authors_the_commit(
    number: int,
    author: str,
    unchecked: bool,
    requester_id: int | None,
    co_author: tuple[str, str] | None,
) -> None:
    request = replace(
        REQUEST, thread=Thread("octo/hello", number), author=author, branch="neo/dispatch"
    )
    thread = None if number == 0 else replace(THREAD, requester_id=requester_id)
    spec, _ = job_spec(
        job(request),
        RepoConfig(),
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t", unchecked=unchecked),
    )
    assert spec.co_author == co_author
    if number == 0:
        # The prompt names who started it only when a user did.
        assert ("started by @mona" in spec.prompt) is not unchecked
    assert spec.bot_email == f"{BOT}@users.noreply.github.com"


@pytest.mark.parametrize(
    ("event", "threadless", "from_workflow", "invocation"),
    [
        ("issue_comment.created", False, False, "@neo $release-notes"),
        ("pull_request_review_comment.created", False, False, "@neo $release-notes"),
        ("issues.opened", False, False, "@neo $release-notes"),
        # A label points at someone else's text: it invokes nothing.
        ("issues.labeled", False, False, ""),
        ("schedule", True, False, "@neo $release-notes"),
        ("issues.labeled", False, True, "@neo $release-notes"),
    ],
)
def test_only_the_requesters_own_words_may_invoke_a_skill(
    event: str, threadless: bool, from_workflow: bool, invocation: str
) -> None:
    request = replace(
        REQUEST,
        event=event,
        trigger=TriggerKind(event),
        instruction="@neo $release-notes",
        instruction_from_workflow=from_workflow,
        thread=Thread("octo/hello", 0 if threadless else 12),
        branch="neo/notes" if threadless else None,
    )
    thread = None if threadless else THREAD
    config = RepoConfig(disabled_skills=("fix-ci",))

    spec, _ = job_spec(
        job(request),
        config,
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t"),
    )

    assert spec.invocation == invocation
    assert spec.settings.disabled_skills == ("fix-ci",)
    assert spec.skills_branch is None


def test_a_pull_request_job_reads_its_skills_from_the_default_branch() -> None:
    request = replace(REQUEST, thread=Thread("octo/hello", 12, is_pull_request=True))
    thread = replace(THREAD, head_ref="feature", same_repository=True)

    spec, _ = job_spec(
        job(request),
        RepoConfig(),
        _Settings(),
        default_branch="trunk",
        thread=thread,
        who=Identity(BOT, "t"),
    )

    assert spec.skills_branch == "trunk"


@pytest.mark.parametrize(
    ("config", "kind", "same", "fork"),
    [
        # A fork's code: as of the head read with the thread, pushed only when asked.
        (RepoConfig(), JobKind.TASK, False, Fork(head="abc123")),
        (RepoConfig(fork_work="push"), JobKind.TASK, False, Fork(head="abc123", push=True)),
        # A review is read-only: only the checkout's bounds apply.
        (RepoConfig(fork_work="push"), JobKind.REVIEW, False, Fork()),
        (RepoConfig(), JobKind.TASK, True, None),
        (RepoConfig(), JobKind.REVIEW, True, None),
    ],
    ids=["fork-propose", "fork-push", "fork-review", "own-branch", "own-review"],
)
def test_a_forks_pull_request_gets_the_fork_rule(
    config: RepoConfig, kind: JobKind, same: bool, fork: Fork | None
) -> None:
    request = replace(REQUEST, thread=Thread("octo/hello", 12, is_pull_request=True), kind=kind)
    thread = replace(THREAD, head_ref="feature", same_repository=same, head_sha="abc123")

    spec, _ = job_spec(
        job(request),
        config,
        _Settings(),
        default_branch="main",
        thread=thread,
        who=Identity(BOT, "t"),
    )

    assert spec.fork == fork


def test_with_a_public_url_the_spec_names_the_jobs_run_page_for_its_commit() -> None:
    public = _Settings(public_url="https://neo.example.com")
    spec, _ = job_spec(
        job(), RepoConfig(), public, default_branch="main", thread=THREAD, who=Identity(BOT, "t")
    )
    assert spec.run_url == "https://neo.example.com/runs/4"
    spec, _ = job_spec(
        job(),
        RepoConfig(),
        _Settings(),
        default_branch="main",
        thread=THREAD,
        who=Identity(BOT, "t"),
    )
    assert spec.run_url is None
