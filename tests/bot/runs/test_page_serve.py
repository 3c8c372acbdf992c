"""The run page of a real `neo serve`, end to end.

A mention becomes a job that neo serve's own worker runs (the scripted model,
the local sandbox); a writer signs in with GitHub (the fake's OAuth web flow)
in Debian's chromium, watches the run's records arrive, steers it (the message
reaches the next model request as their words) and stops it (the report names
them); `neo jobs logs --follow` prints the records the page showed.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from bot.jobs import FINAL_STATES, JobState
from bot.queue import SqliteQueue
from tests.bot.runs.conftest import BROWSER_LOOP
from tests.bot.serving import NEO, AppGitServer, free_port, neo_serve, serve_env
from tests.bot.test_e2e import (
    DEFAULT_BRANCH,
    INSTALLATION,
    REPO,
    USAGE,
    bash,
    bot_comments,
    only_job,
    post_mention,
    wait_until,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, Reply, ScriptedReply, Stall, make_repo, text

pytestmark = BROWSER_LOOP

STEER = "use zoneinfo, not <b>pytz</b>"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.install(INSTALLATION, "octo", ["hello"])  # private: the page needs a sign-in
        fake.set_permission(REPO, "mona", "write")
        fake.set_default_branch(REPO, DEFAULT_BRANCH)
        yield fake


async def test_a_writer_watches_steers_and_stops_a_run_of_neo_serve(
    page: Page, tmp_path: Path, github: FakeGitHub
) -> None:
    make_repo(tmp_path / "served" / "octo" / "hello.git", files=3, branch=DEFAULT_BRANCH)
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    github.oauth.callback_urls = [f"{public}/auth/github/callback"]
    github.oauth.sign_in_as("mona")
    requests: list[Mapping[str, Any]] = []
    steered = threading.Event()

    def second(request: dict[str, Any]) -> ScriptedReply:
        # The page has shown the first call by now; the steer comes while this one runs.
        steered.wait(60)
        return bash("t2", "echo two")

    def third(request: dict[str, Any]) -> ScriptedReply:
        requests.append(request)
        return Stall(120, reply=Reply([text("never read")], usage=USAGE))

    with (
        FakeAnthropicAPI() as anthropic,
        AppGitServer(tmp_path / "served", github) as git_server,
    ):
        anthropic.script(bash("t1", "echo one"), second, third)
        env = {
            **serve_env(github, tmp_path / "data"),
            **anthropic.env,
            "NEO_WORKERS": "1",
            # A heartbeat a second: the worker hears of the Stop at once.
            "NEO_WORKER_LEASE": "4",
            "NEO_GITHUB_GIT_URL": git_server.base_url,
            "NEO_PUBLIC_URL": public,
            "NEO_GITHUB_CLIENT_ID": github.oauth.client_id,
            "NEO_GITHUB_CLIENT_SECRET": github.oauth.client_secret,
        }
        number = github.add_issue(REPO, "Dates", "Parse them in UTC.", user="mona")
        comment = github.add_comment(REPO, number, "@neo fix the dates", user="mona")
        log = tmp_path / "serve.log"
        with neo_serve(env, log, port=port) as server:
            post_mention(server, number, comment, "@neo fix the dates")
            async with SqliteQueue(tmp_path / "data" / "neo.db") as queue:

                async def running() -> bool:
                    return (await only_job(queue)).state is JobState.RUNNING

                await wait_until(running, "the job runs", [log])
                job = (await only_job(queue)).id

                # The job's start (checkout, sandbox, the SDK's first import in
                # this neo serve) is not the page's to wait out: the page's
                # waits begin once the model has been asked.
                async def asked() -> bool:
                    return bool(anthropic.requests)

                await wait_until(asked, "the job asks the model", [log])
                # Anonymous first: GitHub's sign-in, which sends mona back to the run.
                await page.goto(f"{public}/runs/{job}")
                assert page.url == f"{public}/runs/{job}"
                await expect(page.locator("header.site")).to_contain_text("@mona")
                follow = await asyncio.create_subprocess_exec(
                    str(NEO),
                    "jobs",
                    "logs",
                    str(job),
                    "--follow",
                    "--format",
                    "json",
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                )
                await expect(page.locator('details.call:has-text("echo one")')).to_be_visible()
                await page.get_by_label("Message for the agent").fill(STEER)
                await page.get_by_role("button", name="Send").click()
                await expect(page.locator("[role=status].notice")).to_contain_text("Sent")
                steered.set()
                steer = page.locator("blockquote.steer")
                await expect(steer).to_contain_text("@mona wrote:")
                await expect(steer.locator(".body")).to_have_text(STEER)
                await page.get_by_role("button", name="Stop this run").click()

                async def ended() -> bool:
                    return (await only_job(queue)).state in FINAL_STATES

                await wait_until(ended, "the job ended", [log])
                await expect(page.locator("[data-field=state]")).to_have_text("cancelled")
                await expect(page.locator("[data-field=live]")).to_have_text("The run has ended.")
                out, _ = await asyncio.wait_for(follow.communicate(), 30)
                shown = await page.eval_on_selector_all(
                    "#transcript [data-seq]", "els => els.map(e => +e.dataset.seq)"
                )
                last = int(await page.locator("main").get_attribute("data-after") or 0)

    # The steer reached the next model request, as mona's words.
    (request,) = requests
    said = json.dumps(request["messages"][-1])
    assert "zoneinfo" in said
    assert "mona" in said
    # The report names who stopped it.
    report = bot_comments(github, number)[-1]["body"]
    # (GitHub would notify a plain @mona: the report's mention is defused.)
    assert "**Cancelled** by @\u200bmona" in report
    assert f"[The run]({public}/runs/{job})" in report
    # neo jobs logs --follow printed every record, gap-free, up to the page's last.
    printed = [json.loads(line) for line in out.decode().splitlines()]
    seqs = [record["seq"] for record in printed]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seqs[-1] == last
    assert set(shown) <= set(seqs)
