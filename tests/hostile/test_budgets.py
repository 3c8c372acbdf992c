"""Hostile budgets: whatever calls the model and whatever a repository writes, a limit holds.

- A run whose model writes all it may, with subagents, a compaction and the
  last word, bills no more than its `--max-cost` (`neo run`, the real
  anthropic SDK, the fake Messages API counting what each call would cost).
- A model without a known price, the run's own, its subagents' or its
  fallback's, is refused when a limit is set, in one line naming it and how
  to give a price; with the price given (NEO_PRICES, `prices:`) it runs and
  is charged; without a limit it runs at no cost.
- An organisation's daily budget, set in its `.github` repository, binds a
  repository with a `.github/neo.yml` of its own, which can only lower it
  (the real worker, the fake GitHub, a real SQLite queue).
"""

# The worker tests' fixtures are imported by name, and pytest hands them in by name.
# ruff: noqa: F811

from __future__ import annotations

import itertools
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import Settings
from bot.github.app import GitHubApp
from bot.jobs import JobState
from bot.queue import SpendRecord, SqliteQueue
from runner.llm.pricing import cost_usd
from runner.llm.types import Usage
from tests.bot.cli.console import console_env, last_json, neo
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
from tests.fakes import FakeAnthropicAPI, FakeGitHub, FakeGitServer, Reply, text, tool_use
from tests.fakes.anthropic_api import ErrorReply
from tests.fakes.anthropic_api import Usage as WireUsage
from tests.neo_cli import neo_in_process

DAY_START = datetime(2025, 3, 14, tzinfo=UTC).timestamp()
OWNER_FILE = f"{ORG_CONFIG}:.github/neo.yml"
SONNET = "claude-sonnet-4-6"  # $3 a million prompt tokens, $15 a million output tokens
LIMIT = "1.20"


# --- one run's limit, whatever calls the model


class WritesAllItMay:
    """The fake model's answers, by the shape of each request, and what each call billed.

    The run's agent delegates to two subagents, then writes a small file a
    turn with a short answer; its third request is refused as too long for
    the window, so the conversation is summarised; once a budget stops the
    run, the last word is asked for. The subagents, the summary and the last
    word write all the tokens they are allowed. Prompts are counted at about
    four characters a token.
    """

    def __init__(self) -> None:
        self.billed: list[tuple[str, float]] = []
        self._turns = itertools.count(1)

    def __call__(self, body: dict[str, Any]) -> Reply | ErrorReply:
        kind, reply = self._reply(body)
        if isinstance(reply, ErrorReply):
            return reply  # refused: nothing billed
        written = body["max_tokens"] if kind != "turn" else min(body["max_tokens"], 500)
        usage = WireUsage(input_tokens=len(json.dumps(body)) // 4, output_tokens=written)
        priced = cost_usd(SONNET, Usage(usage.input_tokens, usage.output_tokens), "anthropic")
        assert priced is not None
        self.billed.append((kind, priced))
        return Reply(reply.content, reply.stop_reason, usage)

    def _reply(self, body: dict[str, Any]) -> tuple[str, Reply | ErrorReply]:
        system = "".join(block["text"] for block in body.get("system", []))
        tools = sorted(tool["name"] for tool in body.get("tools", []))
        if "condensing the transcript" in system:
            return "summary", Reply([text("## Task\nwrite files\n## Next steps\nmore")])
        if body.get("tool_choice") == {"type": "none"}:
            return "last word", Reply([text("Wrote files.\n\n- [ ] left: the rest")])
        if tools == ["glob", "grep", "read_file"]:
            return "subagent", Reply([text("app.py:1 says 42")])
        n = next(self._turns)
        if n == 3:
            too_long = "prompt is too long: 210000 tokens > 200000 maximum"
            return "turn", ErrorReply(400, "invalid_request_error", too_long)
        write = tool_use(f"w{n}", "write_file", {"path": f"f{n}.txt", "content": "x" * 2_000})
        if n == 1:
            asks = [
                tool_use(f"a{i}", "agent", {"description": f"look {i}", "prompt": "where?"})
                for i in (1, 2)
            ]
            return "turn", Reply([*asks, write], "tool_use")
        return "turn", Reply([write], "tool_use")


def git_tree(path: Path) -> Path:
    path.mkdir()
    (path / "app.py").write_text("value = 42\n")
    for argv in (
        ["init", "--quiet"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start"],
    ):
        subprocess.run(["git", "-C", str(path), *argv], check=True, timeout=30)
    return path


def test_a_run_bills_no_more_than_its_limit_with_subagents_a_compaction_and_a_last_word(
    fake_anthropic: FakeAnthropicAPI, tmp_path: Path
) -> None:
    model = WritesAllItMay()
    fake_anthropic.script(*([model] * 200))
    env = console_env(tmp_path / "home", fake_anthropic.env)

    done = neo(
        env,
        "run",
        "--model",
        SONNET,
        "--max-cost",
        LIMIT,
        "--repo",
        str(git_tree(tmp_path / "tree")),
        "--output-format",
        "json",
        "write files",
        timeout=600,
    )

    result = last_json(done)
    billed = sum(cost for _, cost in model.billed)
    assert billed <= float(LIMIT), f"billed ${billed:.2f} against ${LIMIT}: {model.billed}"
    kinds = [kind for kind, _ in model.billed]
    assert kinds.count("subagent") == 2, kinds
    assert "summary" in kinds, kinds
    assert kinds[-1] == "last word", kinds
    assert result["error"]["type"] == "max_cost", result
    assert result["cost_usd"] == pytest.approx(billed, abs=1e-6)


# --- a model without a known price

UNPRICED = "claude-private-9"  # no published price
GIVEN = json.dumps([{"model": UNPRICED, "input": 2, "output": 10}])


def asks_then_answers(body: dict[str, Any]) -> Reply:
    """The run's agent asks one subagent, then ends; the subagent answers."""
    tools = sorted(tool["name"] for tool in body.get("tools", []))
    usage = WireUsage(input_tokens=1_000, output_tokens=100_000 // 1_000)
    if tools == ["glob", "grep", "read_file"]:
        return Reply([text("app.py:1 says 42")], usage=usage)
    if len(body["messages"]) == 1:
        ask = tool_use("a1", "agent", {"description": "look", "prompt": "where?"})
        return Reply([ask], "tool_use", usage=usage)
    return Reply([text("It says 42.")], usage=usage)


def run_on(
    fake: FakeAnthropicAPI,
    tmp_path: Path,
    *argv: str,
    prices: str | None = None,
    here: tuple[pytest.MonkeyPatch, pytest.CaptureFixture[str]] | None = None,
) -> Any:
    """`neo run` on an empty tree against `fake`, a real process unless `here` says
    in which test's process (monkeypatch and capfd) to run it through bot.cli.main.main."""
    env = console_env(tmp_path / "home", fake.env, {"NEO_PRICES": prices or ""})
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    argv = ("run", "--repo", str(tree), "--output-format", "json", *argv, "look")
    if here is None:
        return neo(env, *argv)
    monkeypatch, capfd = here
    return neo_in_process(argv, env, cwd=tmp_path, monkeypatch=monkeypatch, capfd=capfd)


# The rows of the tables below (test ids) run as a real `neo` process; the
# others through bot.cli.main.main.
REAL = frozenset({"the-runs", "not-json"})


@pytest.fixture
def here(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> tuple[pytest.MonkeyPatch, pytest.CaptureFixture[str]] | None:
    """None for the rows of REAL, else where `run_on` runs `neo` in this process."""
    row = getattr(request.node, "callspec", None)
    return None if row is not None and row.id in REAL else (monkeypatch, capfd)


@pytest.mark.parametrize(
    "flags",
    [
        ("--model", UNPRICED),
        ("--model", SONNET, "--subagent-model", UNPRICED),
        ("--model", SONNET, "--fallback", "anthropic", "--fallback-model", UNPRICED),
    ],
    ids=["the-runs", "the-subagents", "the-fallbacks"],
)
def test_with_a_limit_a_model_without_a_price_is_refused_in_one_line(
    fake_anthropic: FakeAnthropicAPI, tmp_path: Path, flags: tuple[str, ...], here: Any
) -> None:
    fake_anthropic.script(*([asks_then_answers] * 4))

    done = run_on(fake_anthropic, tmp_path, *flags, "--max-cost", "1", here=here)

    assert done.returncode == 2, done.stdout
    assert done.stderr.strip() == (
        f"neo: error: model {UNPRICED!r} has no known price, so the $1.00 cost limit cannot"
        " hold: give its price per million tokens in NEO_PRICES, e.g."
        f' [{{"model": "{UNPRICED}", "input": 3, "output": 15}}]'
    )
    assert fake_anthropic.requests == []


def test_a_subagent_model_given_a_price_runs_and_is_charged(
    fake_anthropic: FakeAnthropicAPI, tmp_path: Path
) -> None:
    fake_anthropic.script(*([asks_then_answers] * 4))

    done = run_on(
        fake_anthropic,
        tmp_path,
        "--model",
        SONNET,
        "--subagent-model",
        UNPRICED,
        "--max-cost",
        "1",
        prices=GIVEN,
    )

    assert done.returncode == 0, done.stderr
    result = last_json(done)
    models = [request.body["model"] for request in fake_anthropic.requests]
    assert models == [SONNET, UNPRICED, SONNET]
    # Two calls of the run's model at its published price, one of the
    # subagent's at the price given: $2 and $10 a million tokens.
    parents = 2 * (1_000 * 3e-6 + 100 * 15e-6)
    child = 1_000 * 2e-6 + 100 * 10e-6
    assert result["cost_usd"] == pytest.approx(parents + child)


@pytest.mark.parametrize("parent", [UNPRICED, SONNET], ids=["the-runs", "the-subagents"])
def test_without_a_limit_a_model_without_a_price_runs_at_no_cost_and_is_named(
    fake_anthropic: FakeAnthropicAPI,
    tmp_path: Path,
    parent: str,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # In this process: what a process shows of a run is proved by the real runs
    # above and below.
    fake_anthropic.script(*([asks_then_answers] * 4))
    here = (monkeypatch, capfd)

    done = run_on(
        fake_anthropic, tmp_path, "--model", parent, "--subagent-model", UNPRICED, here=here
    )

    assert done.returncode == 0, done.stderr
    assert len(fake_anthropic.requests) == 3
    # The cost leaves the unpriced calls out and says so: it was a partial
    # figure, silently (a subagent's 8 calls not counted, nor named).
    result = last_json(done)
    if parent == SONNET:
        assert result["unpriced_calls"] == {UNPRICED: 1}
        assert result["cost_usd"] == pytest.approx(2 * (1_000 * 3e-6 + 100 * 15e-6))
    else:
        assert result["unpriced_calls"] == {UNPRICED: 3}
        assert result["cost_usd"] is None


@pytest.mark.parametrize(
    ("prices", "said"),
    [
        ("{", 'NEO_PRICES: expected a JSON list, e.g. [{"model": "my-model", "input": 1, "out'),
        ('[{"model": "m", "input": 1}]', "NEO_PRICES: output is missing"),
        ('[{"model": "m", "input": 1, "output": "lots"}]', "NEO_PRICES: output: Input should"),
        ('[{"model": "m", "input": 1e400, "output": 1}]', "NEO_PRICES: input: Input should be"),
    ],
    ids=["not-json", "no-output-price", "not-a-number", "infinite"],
)
def test_bad_prices_stop_neo_run_in_one_line(
    fake_anthropic: FakeAnthropicAPI, tmp_path: Path, prices: str, said: str, here: Any
) -> None:
    done = run_on(fake_anthropic, tmp_path, "--max-cost", "1", prices=prices, here=here)

    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert line.startswith(f"neo: error: {said}"), line
    assert fake_anthropic.requests == []


@pytest.mark.parametrize(
    "limit",
    ["max_cost_usd: 1\n", "budgets:\n  repo_daily_usd: 5\n"],
    ids=["run-limit", "daily-budget"],
)
@pytest.mark.parametrize("priced", [False, True], ids=["no-price", "priced-in-config"])
async def test_a_job_with_a_limit_runs_a_model_without_a_price_only_once_its_config_prices_it(
    queue: SqliteQueue,
    app: GitHubApp,
    settings: Settings,
    github: FakeGitHub,
    git_server: FakeGitServer,
    fake_anthropic: FakeAnthropicAPI,
    limit: str,
    priced: bool,
) -> None:
    prices = f"prices:\n  - {{model: {UNPRICED}, input: 2, output: 10}}\n" if priced else ""
    github.put_file(REPO, ".github/neo.yml", f"model: {UNPRICED}\n{limit}{prices}")
    fake_anthropic.script(Reply([text("Looked.")], usage=WireUsage(1_000, 100)))

    job_id = await mention(queue, github)
    await run_until(budget_worker(queue, app, settings), finished(queue, job_id))

    job = await get(queue, job_id)
    assert job.result is not None
    if priced:
        assert job.state is JobState.SUCCEEDED, job.result
        assert job.result.cost_usd == pytest.approx(1_000 * 2e-6 + 100 * 10e-6)
        return
    assert job.state is JobState.FAILED, job.result
    [reply] = bot_comments(github, job.request.thread.number)
    assert f"model {UNPRICED!r} has no known price, so the" in reply["body"]
    assert "its price per million tokens under `prices:` in .github/neo.yml" in reply["body"]
    assert fake_anthropic.requests == []


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
