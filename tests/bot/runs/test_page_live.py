"""The run page in a real browser (Debian's chromium): live records, reloads, steering and
stopping, who sees what, hostile text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.bot.runs.doors import VIEWER_COOKIE, TableDoor
from tests.bot.runs.live import Live, serving
from tests.bot.runs.scripted import append, end, start, turn

PUBLIC = "octo/public"
PRIVATE = "octo/private"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    door = TableDoor(public={PUBLIC}, readers={"reader"}, writers={"writer"})
    url = "sqlite:///" + str(tmp_path_factory.mktemp("pages") / "neo.db")
    with serving(url, lambda _: door) as site:
        yield site


def _as(page: Page, live: Live, login: str) -> None:
    page.context.add_cookies([{"name": VIEWER_COOKIE, "value": login, "url": live.url}])


def _seqs(page: Page) -> list[int]:
    return [
        int(s)
        for s in page.eval_on_selector_all(
            "#transcript [data-seq]", "els => els.map(e => e.dataset.seq)"
        )
    ]


def test_a_running_jobs_records_appear_in_order_as_they_are_written(page: Page, live: Live) -> None:
    job = start(live)
    page.goto(f"{live.url}/runs/{job}")
    expect(page.locator("[data-field=live]")).to_contain_text("Live")
    for number in range(1, 4):
        last = append(live, job, *turn(number))
        expect(page.locator(f'[data-seq="{last}"]')).to_have_count(0)  # a result fills its call
        expect(page.locator("[data-field=turns]")).to_have_text(str(number))
        expect(page.locator(f'details.call:has-text("t{number}") .status')).to_have_text(
            "ok · 120 ms"
        )
    expect(page.locator("[data-field=tokens]")).to_have_text("3,000 in · 150 out")
    expect(page.locator("[data-field=limits]")).to_contain_text("197 left")
    assert _seqs(page) == sorted(_seqs(page))
    end(live, job)
    expect(page.locator("[data-field=live]")).to_have_text("The run has ended.")
    expect(page.locator("[data-field=state]")).to_have_text("succeeded")


def test_a_reload_mid_run_resumes_with_no_gap_and_no_duplicate(page: Page, live: Live) -> None:
    job = start(live)
    append(live, job, *turn(1), *turn(2))
    page.goto(f"{live.url}/runs/{job}")
    last = append(live, job, ("text", {"text": "after the first load"}))
    expect(page.locator(f'[data-seq="{last}"]')).to_be_visible()
    page.reload()
    last = append(live, job, ("text", {"text": "after the reload"}), *turn(3))
    expect(page.locator("details.call")).to_have_count(3)
    seqs = _seqs(page)
    assert len(seqs) == len(set(seqs)), "a record shown twice"
    # Every record but the header's (turn, checklist) is on the page, once, in order.
    assert seqs == [1, 3, 4, 7, 8, 10, 11, 13, 14]
    end(live, job)


def test_hostile_transcript_text_stays_text(page: Page, live: Live) -> None:
    job = start(live)
    hostile = (
        '<script>window.pwned = 1</script></details><a href="javascript:window.pwned=2">click</a>'
    )
    append(live, job, ("text", {"text": hostile}))
    page.goto(f"{live.url}/runs/{job}")
    append(
        live,
        job,
        ("tool_call", {"call_id": "x", "name": hostile, "args": {"command": hostile}}),
        ("tool_result", {"call_id": "x", "output": hostile}),
        ("steer", {"author": "mallory", "text": hostile}),
    )
    expect(page.locator("blockquote.steer")).to_be_visible()
    assert page.evaluate("window.pwned") is None
    assert page.locator("#transcript a, #transcript script").count() == 0
    expect(page.locator(".ev.text .body").first).to_have_text(hostile)
    expect(page.locator("blockquote.steer .body")).to_have_text(hostile)
    end(live, job)


def test_a_private_runs_anonymous_visitor_is_sent_to_sign_in_and_a_stranger_refused(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    response = page.request.get(f"{live.url}/runs/{job}", max_redirects=0)
    assert response.status == 303
    assert response.headers["location"].startswith("/auth/github/login")
    _as(page, live, "stranger")
    assert page.request.get(f"{live.url}/runs/{job}").status == 403
    assert page.request.get(f"{live.url}/runs/{job}/events").status == 403
    end(live, job)


def test_a_reader_sees_no_stop_or_steer_and_a_forged_post_is_refused(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    _as(page, live, "reader")
    page.goto(f"{live.url}/runs/{job}")
    expect(page.locator("h1")).to_contain_text(PRIVATE)
    assert page.locator("form.stop, form.steer").count() == 0
    for action in ("stop", "steer"):
        refused = page.request.post(
            f"{live.url}/runs/{job}/{action}", form={"csrf": "csrf-reader", "text": "x"}
        )
        assert refused.status == 403
    _as(page, live, "writer")
    forged = page.request.post(f"{live.url}/runs/{job}/stop", form={"csrf": "guessed"})
    assert forged.status == 403
    still = live.run(lambda queue: queue.get(job))
    assert still is not None
    assert still.state == "running"
    end(live, job)


def test_a_writers_steer_is_kept_for_the_run_and_stop_asks_it_to_end_in_their_name(
    page: Page, live: Live
) -> None:
    job = start(live, repository=PRIVATE)
    _as(page, live, "writer")
    page.goto(f"{live.url}/runs/{job}")
    page.get_by_label("Message for the agent").fill("use the <b>new</b> API")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("[role=status].notice")).to_contain_text("Sent")
    (steer,) = live.run(lambda queue: queue.take_steers(job))
    assert (steer.author, steer.text) == ("writer", "use the <b>new</b> API")
    page.get_by_role("button", name="Stop this run").click()
    expect(page.locator("[role=status].notice")).to_contain_text("Stop requested")
    stopped = live.run(lambda queue: queue.get(job))
    assert stopped is not None
    assert stopped.cancel_requested


def test_the_list_shows_only_the_runs_the_viewer_may_see(page: Page, live: Live) -> None:
    public, private = start(live), start(live, repository=PRIVATE)
    page.goto(f"{live.url}/runs")
    expect(page.locator(f'a[href="/runs/{public}"]')).to_be_visible()
    assert page.locator(f'a[href="/runs/{private}"]').count() == 0
    _as(page, live, "reader")
    page.goto(f"{live.url}/runs?repo={PRIVATE}&state=running")
    expect(page.locator(f'a[href="/runs/{private}"]')).to_be_visible()
    assert page.locator(f'a[href="/runs/{public}"]').count() == 0
    end(live, public)
    end(live, private)
