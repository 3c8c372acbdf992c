"""Daily budgets: the pure rules, then the worker end to end (a real SqliteQueue on a
temp file, the fake GitHub, the fake git server, the anthropic SDK against the fake
Messages API, and the local sandbox)."""

# The worker tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.config import Budgets
from bot.config.settings import Settings, load_settings
from bot.github.app import GitHubApp
from bot.github.client import Spacers
from bot.jobs import JobState
from bot.queue import SpendRecord, SqliteQueue
from bot.worker.budgets import (
    Allowance,
    Limit,
    OperatorBudgets,
    Over,
    allowance,
    bounded_cost,
    day_window,
    limits,
    operator_budgets,
)
from bot.worker.config import ConfigSource
from bot.worker.loop import Worker, WorkerDeps, WorkerOptions
from tests.bot.worker.test_loop import (  # noqa: F401 (fixtures)
    INSTALLATION,
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    enqueue,
    finished,
    get,
    git_server,
    github,
    origin,
    queue,
    request,
    run_until,
    script_edit,
    settings,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, FakeGitServer, Reply, tool_use

# 15:30 UTC on a fixed day: the window is that day, and it resets at the next midnight.
NOW = datetime(2025, 3, 14, 15, 30, tzinfo=UTC).timestamp()
DAY_START = datetime(2025, 3, 14, tzinfo=UTC).timestamp()
PATH = ".github/neo.yml"


# --- the rules


def test_the_window_is_the_utc_day_and_resets_at_the_next_midnight() -> None:
    start, resets = day_window(NOW)
    assert start == DAY_START
    assert resets == datetime(2025, 3, 15, tzinfo=UTC)
    assert day_window(DAY_START)[0] == DAY_START


def test_a_repository_value_replaces_the_default_and_is_lowered_to_the_ceiling() -> None:
    operator = OperatorBudgets(
        repo_daily_usd=5.0,
        repo_daily_ceiling_usd=20.0,
        installation_daily_ceiling_usd=100.0,
    )
    own = Budgets(repo_daily_usd=50.0)
    found = limits(own, operator, config_path=PATH)
    assert found == (
        Limit("repository", 20.0, f"`budgets.repo_daily_usd` in `{PATH}`", clamped_from=50.0),
        Limit("installation", 100.0, "NEO_BUDGET_INSTALLATION_DAILY_CEILING_USD"),
    )
    note = found[0].note
    assert note is not None
    assert "$50.00" in note
    assert "$20.00" in note
    assert limits(Budgets(), operator, config_path=PATH)[0] == Limit(
        "repository", 5.0, "NEO_BUDGET_REPO_DAILY_USD"
    )
    lower = limits(Budgets(repo_daily_usd=3.0), operator, config_path=PATH)[0]
    assert (lower.usd, lower.clamped_from) == (3.0, None)
    assert limits(Budgets(), OperatorBudgets(), config_path=PATH) == ()


def test_the_owners_budgets_bind_a_repositorys_own_which_can_only_lower_them() -> None:
    owner_file = "octo/.github:.github/neo.yml"
    owner = Budgets(repo_daily_usd=5.0, installation_daily_usd=10.0)

    higher = Budgets(repo_daily_usd=50.0).bound_by(owner, owner_file)
    lower = Budgets(repo_daily_usd=2.0, installation_daily_usd=20.0).bound_by(owner, owner_file)

    assert limits(higher, OperatorBudgets(), config_path=PATH) == (
        Limit("repository", 5.0, f"`budgets.repo_daily_usd` in `{owner_file}`"),
        Limit("installation", 10.0, f"`budgets.installation_daily_usd` in `{owner_file}`"),
    )
    assert limits(lower, OperatorBudgets(), config_path=PATH) == (
        Limit("repository", 2.0, f"`budgets.repo_daily_usd` in `{PATH}`"),
        Limit("installation", 10.0, f"`budgets.installation_daily_usd` in `{owner_file}`"),
    )
    # The operator's ceiling still lowers what the owner set.
    ceiling = OperatorBudgets(installation_daily_ceiling_usd=8.0)
    assert limits(higher, ceiling, config_path=PATH)[1] == Limit(
        "installation", 8.0, f"`budgets.installation_daily_usd` in `{owner_file}`", 10.0
    )


def test_the_operator_budgets_come_from_the_neo_budget_settings(settings: Settings) -> None:
    environ = {
        "NEO_GITHUB_APP_ID": "1",
        "NEO_GITHUB_PRIVATE_KEY": "k",
        "NEO_WEBHOOK_SECRET": "s",
        "NEO_BUDGET_REPO_DAILY_USD": "5",
        "NEO_BUDGET_REPO_DAILY_CEILING_USD": "20",
        "NEO_BUDGET_INSTALLATION_DAILY_USD": "50.5",
        "NEO_BUDGET_INSTALLATION_DAILY_CEILING_USD": "100",
    }
    assert operator_budgets(load_settings(environ)) == OperatorBudgets(5.0, 20.0, 50.5, 100.0)
    assert operator_budgets(settings) == OperatorBudgets()


def test_the_allowance_is_the_least_left_and_a_spent_limit_refuses() -> None:
    repo = Limit("repository", 10.0, "r")
    installation = Limit("installation", 12.0, "i")
    left = allowance({"repository": 4.0, "installation": 9.0}, (repo, installation), NOW)
    assert left == Allowance(3.0, installation)
    over = allowance({"repository": 10.0}, (repo, installation), NOW)
    assert isinstance(over, Over)
    assert over.limit is repo
    assert over.spent == 10.0
    assert allowance({}, (), NOW) is None
    assert bounded_cost(None, Allowance(3.0, repo)) == 3.0
    assert bounded_cost(2.0, Allowance(3.0, repo)) == 2.0
    assert bounded_cost(5.0, Allowance(3.0, repo)) == 3.0
    assert bounded_cost(5.0, None) == 5.0


# --- the worker


def budget_worker(queue: SqliteQueue, app: GitHubApp, settings: Settings, **deps: Any) -> Worker:
    return Worker(
        WorkerDeps(
            queue=queue,
            app=app,
            settings=settings,
            spacers=Spacers(0.0),
            wall_clock=lambda: NOW,
            **deps,
        ),
        WorkerOptions(
            name="w1", concurrency=1, heartbeat_every=0.2, poll_every=0.05, edit_every=0.2
        ),
        ConfigSource(),
    )


async def mention(queue: SqliteQueue, github: FakeGitHub, comment_id: int | None = None) -> int:
    number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
    comment = github.add_comment(REPO, number, "@neo add a line to the README", user="mona")
    return await enqueue(queue, request(number, comment, delivery=f"d{comment}"))


async def test_a_spent_daily_budget_refuses_the_next_mention_even_after_a_restart(
    tmp_path: Path,
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # The first run, with no budget yet, spends; its cost is recorded in the queue.
    script_edit(fake_anthropic)
    first = await mention(queue, github)
    await run_until(budget_worker(queue, app, settings), finished(queue, first))
    done = await get(queue, first)
    assert done.state is JobState.SUCCEEDED, done.result
    assert done.result is not None
    assert done.result.cost_usd
    spent = await queue.spent_since(DAY_START, repository=REPO)
    assert spent == done.result.cost_usd
    assert await queue.spent_since(DAY_START, installation_id=INSTALLATION) == spent

    # Then the repository sets a daily budget that spend has reached.
    github.put_file(REPO, PATH, f"budgets:\n  repo_daily_usd: {spent}\n")
    calls, clones = len(fake_anthropic.requests), len(git_server.requests)
    reactions = len(github.reactions(REPO))
    # A restart: a new queue object on the same file.
    await queue.close()
    async with SqliteQueue(queue.path) as reopened:
        job_id = await mention(reopened, github)
        await run_until(budget_worker(reopened, app, settings), finished(reopened, job_id))
        job = await get(reopened, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error is not None
    number = job.request.thread.number
    [reply] = bot_comments(github, number)
    line = reply["body"].splitlines()[-1]
    assert line == job.result.error
    assert f"the daily budget of `{REPO}`" in line
    assert f"${spent:,.2f} per UTC day (`budgets.repo_daily_usd` in `{PATH}`)" in line
    assert "since 00:00 UTC today" in line
    assert "resets at 2025-03-15 00:00 UTC" in line
    # No 👀, no clone, no model call.
    assert len(fake_anthropic.requests) == calls
    assert len(git_server.requests) == clones
    assert len(github.reactions(REPO)) == reactions


async def test_the_operator_ceiling_lowers_a_repositorys_higher_budget_and_says_so(
    tmp_path: Path,
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    github.put_file(REPO, PATH, "budgets:\n  repo_daily_usd: 50\n")
    await queue.record_spend(
        [SpendRecord(1, REPO, INSTALLATION, "claude", at=DAY_START + 60, cost_usd=20.0)]
    )
    operator = OperatorBudgets(repo_daily_ceiling_usd=20.0)
    job_id = await mention(queue, github)
    await run_until(budget_worker(queue, app, settings, budgets=operator), finished(queue, job_id))
    job = await get(queue, job_id)
    assert job.state is JobState.FAILED
    assert job.result is not None
    assert job.result.error is not None
    assert "$20.00 per UTC day" in job.result.error
    assert "$20.00 since 00:00 UTC today" in job.result.error
    assert "of $50.00 is above this service's ceiling" in job.result.error
    assert fake_anthropic.requests == []
    assert git_server.requests == []
    assert github.reactions(REPO) == []


async def test_what_is_left_today_bounds_the_runs_cost_limit(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
) -> None:
    # $10 a day for the installation, $9.95 of it spent: the run may spend $0.05,
    # though its own `max_cost_usd` is $5.
    github.put_file(REPO, PATH, "max_cost_usd: 5\nbudgets:\n  installation_daily_usd: 10\n")
    await queue.record_spend(
        [SpendRecord(1, "octo/other", INSTALLATION, "claude", at=DAY_START, cost_usd=9.95)]
    )
    # No call can be made within $0.05: its prompt alone may cost more (every
    # prompt token at the hour-long cache write's $6 a million).
    fake_anthropic.script(
        Reply([tool_use("t1", "bash", {"command": "echo hi > hi.txt"})], "tool_use"),
        Reply([]),
    )
    job_id = await mention(queue, github)
    await run_until(budget_worker(queue, app, settings), finished(queue, job_id))
    job = await get(queue, job_id)
    assert job.result is not None
    assert job.result.conclusion.value == "failed", job.result
    assert job.result.error is not None
    assert "of the $0.05 cost limit is spent" in job.result.error
    report = job.result.report or ""
    assert (
        "Today's installation budget has $0.05 left (`budgets.installation_daily_usd`"
        f" in `{PATH}`), so this run may spend at most that." in report
    )
    # Nothing was asked of the model: the day's spend stays within its limit.
    assert fake_anthropic.requests == []
    assert await queue.spent_since(DAY_START, installation_id=INSTALLATION) == 9.95
