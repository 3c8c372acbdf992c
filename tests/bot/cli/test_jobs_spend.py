"""`neo jobs spend` as a real process over a real SQLite queue file."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.queue import SpendRecord, SqliteQueue, sqlite_url
from tests.bot.cli.console import console_env, neo

TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def record(db: Path, *records: SpendRecord) -> None:
    async def write() -> None:
        async with SqliteQueue(db) as queue:
            await queue.record_spend(records)

    asyncio.run(write())


def spent(job_id: int, day: datetime, cost: float, repository: str, model: str) -> SpendRecord:
    return SpendRecord(
        job_id=job_id,
        repository=repository,
        installation_id=7,
        model=model,
        at=(day + timedelta(hours=1)).timestamp(),
        cost_usd=cost,
        input_tokens=12_000,
        output_tokens=800,
    )


def test_spend_is_a_table_per_day_repository_and_model_and_json_on_request(
    tmp_path: Path,
) -> None:
    db = tmp_path / "data" / "neo.db"
    yesterday = TODAY - timedelta(days=1)
    long_ago = TODAY - timedelta(days=30)
    record(
        db,
        spent(1, TODAY, 1.5, "octo/hello", "claude-sonnet-5-5"),
        spent(2, TODAY, 0.25, "octo/hello", "claude-sonnet-5-5"),
        spent(3, yesterday, 2.0, "octo/other", "gpt-5"),
        spent(4, long_ago, 9.0, "octo/hello", "claude-sonnet-5-5"),
    )
    env = console_env(tmp_path / "home", {"NEO_QUEUE_URL": sqlite_url(db)})

    done = neo(env, "jobs", "spend")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows == [
        ["DAY", "REPOSITORY", "MODEL", "JOBS", "TOKENS", "IN", "TOKENS", "OUT", "COST"],
        [f"{TODAY:%Y-%m-%d}", "octo/hello", "claude-sonnet-5-5", "2", "24,000", "1,600", "$1.75"],
        [f"{yesterday:%Y-%m-%d}", "octo/other", "gpt-5", "1", "12,000", "800", "$2.00"],
        ["total", "$3.75"],
    ]

    since = neo(env, "jobs", "spend", "--since", f"{long_ago:%Y-%m-%d}", "--repo", "Octo/Hello")
    assert since.returncode == 0, since.stderr
    assert "octo/other" not in since.stdout
    assert since.stdout.splitlines()[-1].split() == ["total", "$10.75"]

    as_json = neo(env, "jobs", "spend", "--format", "json", "--repo", "octo/other")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == [
        {
            "day": f"{yesterday:%Y-%m-%d}",
            "repository": "octo/other",
            "model": "gpt-5",
            "jobs": 1,
            "cost_usd": 2.0,
            "input_tokens": 12_000,
            "output_tokens": 800,
        }
    ]

    none = neo(env, "jobs", "spend", "--repo", "octo/nobody")
    assert none.returncode == 0, none.stderr
    assert none.stdout.startswith("no spend since ")


def test_a_bad_day_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "data" / "neo.db"
    record(db)
    env = console_env(tmp_path / "home", {"NEO_QUEUE_URL": sqlite_url(db)})
    done = neo(env, "jobs", "spend", "--since", "14/03/2025")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()[-1:]
    assert "expected a day as YYYY-MM-DD, not '14/03/2025'" in line
    assert "Traceback" not in done.stderr
