"""The run page of a job a worker on another host runs: the page's server and the
worker are processes of their own, their only link the PostgreSQL queue."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.async_api import Page, expect

from tests.bot.runs.conftest import BROWSER_LOOP
from tests.bot.runs.doors import TableDoor
from tests.bot.runs.live import Live, serving
from tests.bot.runs.scripted import start

pytestmark = BROWSER_LOOP

PUBLIC = "octo/public"


@pytest.fixture
def live(postgres_url: str) -> Iterator[Live]:
    with serving(postgres_url, lambda _: TableDoor(public={PUBLIC})) as site:
        yield site


async def test_a_worker_on_another_host_is_watched_live_over_postgresql(
    page: Page, live: Live, postgres_url: str
) -> None:
    job = start(live, repository=PUBLIC)
    await page.goto(f"{live.url}/runs/{job}")
    await expect(page.locator("[data-field=live]")).to_contain_text("Live")
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.bot.runs.writer",
        postgres_url,
        str(job),
        "5",
        stdout=subprocess.PIPE,
    )
    # Seen while the worker writes: the first turn's call before its last turn is written.
    await expect(page.locator("details.call").first).to_be_visible()
    out, _ = await asyncio.wait_for(worker.communicate(), 60)
    assert worker.returncode == 0
    await expect(page.locator("[data-field=live]")).to_have_text("The run has ended.")
    await expect(page.locator("details.call")).to_have_count(5)
    await expect(page.locator("[data-field=turns]")).to_have_text("5")
    seqs = await page.eval_on_selector_all(
        "#transcript [data-seq]", "els => els.map(e => +e.dataset.seq)"
    )
    # state 1; each turn: turn, text, call, result (in its call); the final state last.
    assert seqs == [1, *[n for t in range(5) for n in (3 + 4 * t, 4 + 4 * t)], int(out)]
