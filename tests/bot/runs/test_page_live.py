"""The run page in a real browser (Debian's chromium): live records, reloads, steering and
stopping, who sees what, hostile text."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.bot.runs.conftest import BROWSER_LOOP
from tests.bot.runs.doors import VIEWER_COOKIE, TableDoor
from tests.bot.runs.live import Live, serving
from tests.bot.runs.scripted import append, end, start, turn

pytestmark = BROWSER_LOOP

PUBLIC = "octo/public"
PRIVATE = "octo/private"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    door = TableDoor(public={PUBLIC}, readers={"reader"}, writers={"writer"})
    url = "sqlite:///" + str(tmp_path_factory.mktemp("pages") / "neo.db")
    with serving(url, lambda _: door) as site:
        yield site


async def _as(page: Page, live: Live, login: str) -> None:
    await page.context.add_cookies([{"name": VIEWER_COOKIE, "value": login, "url": live.url}])


async def _seqs(page: Page) -> list[int]:
    return [
        int(s)
        for s in await page.eval_on_selector_all(
            "#transcript [data-seq]", "els => els.map(e => e.dataset.seq)"
        )
    ]


async def test_a_running_jobs_records_appear_in_order_as_they_are_written(
    page: Page, live: Live
) -> None:
    job = start(live)
    await page.goto(f"{live.url}/runs/{job}")
    await expect(page.locator("[data-field=live]")).to_contain_text("Live")
    for number in range(1, 4):
        last = append(live, job, *turn(number))
        await expect(page.locator(f'[data-seq="{last}"]')).to_have_count(
            0
        )  # a result fills its call
        await expect(page.locator("[data-field=turns]")).to_have_text(str(number))
        await expect(page.locator(f'details.call:has-text("t{number}") .status')).to_have_text(
            "ok · 120 ms"
        )
    await expect(page.locator("[data-field=tokens]")).to_have_text("3,000 in · 150 out")
    await expect(page.locator("[data-field=limits]")).to_contain_text("197 left")
    assert (await _seqs(page)) == sorted(await _seqs(page))
    end(live, job)
    await expect(page.locator("[data-field=live]")).to_have_text("The run has ended.")
    await expect(page.locator("[data-field=state]")).to_have_text("succeeded")
    # Reloaded, the ended run is a static page: all of it, and no script to stream more.
    await page.reload()
    assert await page.locator("script").count() == 0
    await expect(page.locator("details.call")).to_have_count(3)
    await expect(page.locator(".static-note")).to_be_visible()


async def test_a_reload_mid_run_resumes_with_no_gap_and_no_duplicate(
    page: Page, live: Live
) -> None:
    job = start(live)
    append(live, job, *turn(1), *turn(2))
    await page.goto(f"{live.url}/runs/{job}")
    last = append(live, job, ("text", {"text": "after the first load"}))
    await expect(page.locator(f'[data-seq="{last}"]')).to_be_visible()
    await page.reload()
    last = append(live, job, ("text", {"text": "after the reload"}), *turn(3))
    await expect(page.locator("details.call")).to_have_count(3)
    seqs = await _seqs(page)
    assert len(seqs) == len(set(seqs)), "a record shown twice"
    # Every record but the header's (turn, checklist) is on the page, once, in order.
    assert seqs == [1, 3, 4, 7, 8, 10, 11, 13, 14]
    end(live, job)


async def test_hostile_transcript_text_stays_text(page: Page, live: Live) -> None:
    job = start(live)
    hostile = (
        '<script>window.pwned = 1</script></details><a href="javascript:window.pwned=2">click</a>'
    )
    append(live, job, ("text", {"text": hostile}))
    await page.goto(f"{live.url}/runs/{job}")
    append(
        live,
        job,
        ("tool_call", {"call_id": "x", "name": hostile, "args": {"command": hostile}}),
        ("tool_result", {"call_id": "x", "output": hostile}),
        ("steer", {"author": "mallory", "text": hostile}),
    )
    await expect(page.locator("blockquote.steer")).to_be_visible()
    assert await page.evaluate("window.pwned") is None
    assert await page.locator("#transcript a, #transcript script").count() == 0
    await expect(page.locator(".ev.text .body").first).to_have_text(hostile)
    await expect(page.locator("blockquote.steer .body")).to_have_text(hostile)
    end(live, job)


async def test_a_private_runs_anonymous_visitor_is_sent_to_sign_in_and_a_stranger_refused(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    response = await page.request.get(f"{live.url}/runs/{job}", max_redirects=0)
    assert response.status == 303
    assert response.headers["location"].startswith("/auth/github/login")
    await _as(page, live, "stranger")
    assert (await page.request.get(f"{live.url}/runs/{job}")).status == 403
    assert (await page.request.get(f"{live.url}/runs/{job}/events")).status == 403
    end(live, job)


async def test_a_reader_sees_no_stop_or_steer_and_a_forged_post_is_refused(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    await _as(page, live, "reader")
    await page.goto(f"{live.url}/runs/{job}")
    await expect(page.locator("h1")).to_contain_text(PRIVATE)
    assert await page.locator("form.stop, form.steer").count() == 0
    for action in ("stop", "steer"):
        refused = await page.request.post(
            f"{live.url}/runs/{job}/{action}", form={"csrf": "csrf-reader", "text": "x"}
        )
        assert refused.status == 403
    await _as(page, live, "writer")
    forged = await page.request.post(f"{live.url}/runs/{job}/stop", form={"csrf": "guessed"})
    assert forged.status == 403
    still = live.run(lambda queue: queue.get(job))
    assert still is not None
    assert still.state == "running"
    end(live, job)


async def test_a_writers_steer_is_kept_for_the_run_and_stop_asks_it_to_end_in_their_name(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    await _as(page, live, "writer")
    await page.goto(f"{live.url}/runs/{job}")
    await page.get_by_label("Message for the agent").fill("use the <b>new</b> API")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator("[role=status].notice")).to_contain_text("Sent")
    (steer,) = live.run(lambda queue: queue.take_steers(job))
    assert (steer.author, steer.text) == ("writer", "use the <b>new</b> API")
    await page.get_by_role("button", name="Stop this run").click()
    await expect(page.locator("[role=status].notice")).to_contain_text("Stop requested")
    stopped = live.run(lambda queue: queue.get(job))
    assert stopped is not None
    assert stopped.cancel_requested


async def test_the_list_shows_only_the_runs_the_viewer_may_see(page: Page, live: Live) -> None:
    public, private = start(live), start(live, repository=PRIVATE)
    await page.goto(f"{live.url}/runs")
    await expect(page.locator(f'a[href="/runs/{public}"]')).to_be_visible()
    assert await page.locator(f'a[href="/runs/{private}"]').count() == 0
    await _as(page, live, "reader")
    await page.goto(f"{live.url}/runs?repo={PRIVATE}&state=running")
    await expect(page.locator(f'a[href="/runs/{private}"]')).to_be_visible()
    assert await page.locator(f'a[href="/runs/{public}"]').count() == 0
    end(live, public)
    end(live, private)


async def test_the_page_has_landmarks_works_by_keyboard_and_fits_a_phone(
    page: Page, live: Live
) -> None:
    job = start(live)
    long = "x" * 400  # one unbreakable line, as a path or a hash can be
    append(live, job, *turn(1), ("text", {"text": long}))
    await page.set_viewport_size({"width": 390, "height": 800})
    await page.goto(f"{live.url}/runs/{job}")
    await expect(page.get_by_role("banner")).to_have_count(1)
    await expect(page.get_by_role("main")).to_have_count(1)
    await expect(page.get_by_role("log")).to_have_count(1)
    # Nothing wider than the phone: long lines wrap or scroll in their own box.
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # The skip link first, then into the transcript by keyboard: a call opens with Enter.
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    call = page.locator("details.call").first
    await call.locator("summary").focus()
    await page.keyboard.press("Enter")
    await expect(call).to_have_attribute("open", "")
    await expect(call.locator("pre.out")).to_have_text("1 passed")
    end(live, job)


async def test_a_reconnect_with_last_event_id_resumes_after_it(live: Live) -> None:
    job = start(live)
    append(live, job, *turn(1))
    end(live, job)
    url = f"{live.url}/runs/{job}/events?after=1"
    async with httpx.AsyncClient(timeout=20) as client:
        resumed = await client.get(url, headers={"last-event-id": "3"})
        fresh = await client.get(url)
    ids = [int(line[4:]) for line in resumed.text.splitlines() if line.startswith("id: ")]
    assert ids == [4, 5, 6]  # the call, its result, the finished record
    assert [int(line[4:]) for line in fresh.text.splitlines() if line.startswith("id: ")] == [
        2,
        3,
        4,
        5,
        6,
    ]
    assert resumed.headers["content-type"].startswith("text/event-stream")
    assert resumed.text.endswith("event: end\ndata: {}\n\n")
