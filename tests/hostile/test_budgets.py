"""Hostile budgets: whatever calls the model and whatever a repository writes, a limit holds.

- An organisation's daily budget, set in its `.github` repository, binds a
  repository with a `.github/neo.yml` of its own, which can only lower it
  (the real worker, the fake GitHub, a real SQLite queue).
"""

# The worker tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import JobState
from bot.queue import SpendRecord, SqliteQueue
from tests.bot.worker.test_budgets import budget_worker, mention
from tests.bot.worker.test_loop import (  # noqa: F401 (fixtures)
    INSTALLATION,
    ORG_CONFIG,
    REPO,
    anthropic_env,
    app,
    bot_comments,
    clock,
    finished,
    get,
    git_server,
    github,
    install_owner_config,
    origin,
    queue,
    run_until,
    settings,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, FakeGitServer, Reply, text

DAY_START = datetime(2025, 3, 14, tzinfo=UTC).timestamp()
OWNER_FILE = f"{ORG_CONFIG}:.github/neo.yml"


@pytest.mark.parametrize(
    ("own_file", "limit", "named"),
    [
        ("max_turns: 5\n", "$0.50", OWNER_FILE),
        ("budgets:\n  installation_daily_usd: 100\n", "$0.50", OWNER_FILE),
        ("budgets:\n  installation_daily_usd: 0.25\n", "$0.25", ".github/neo.yml"),
    ],
    ids=["silent-on-budgets", "tries-to-raise-it", "lowers-it"],
)
async def test_the_owners_installation_budget_binds_a_repository_with_its_own_config(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
    own_file: str,
    limit: str,
    named: str,
) -> None:
    install_owner_config(github, "budgets:\n  installation_daily_usd: 0.50\n")
    github.put_file(REPO, ".github/neo.yml", own_file)
    # Another repository of the installation spent $1.80 today.
    await queue.record_spend(
        [SpendRecord(1, "octo/other", INSTALLATION, "claude", at=DAY_START + 60, cost_usd=1.8)]
    )
    # What the model would answer, were it asked.
    fake_anthropic.script(Reply([text("Looked.")]))

    job_id = await mention(queue, github)
    await run_until(budget_worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.state is JobState.FAILED, job.result
    [reply] = bot_comments(github, job.request.thread.number)
    assert (
        f"the daily budget of the App installation of `octo` ({INSTALLATION}), {limit} per UTC"
        f" day (`budgets.installation_daily_usd` in `{named}`), is spent: $1.80 since 00:00"
        " UTC today"
    ) in reply["body"]
    assert fake_anthropic.requests == []
    assert git_server.requests == []
