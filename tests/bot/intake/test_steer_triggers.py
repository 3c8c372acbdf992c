"""Triage of `@neo steer ...`: a comment that starts with it steers the thread's run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.intake.mentions import steer_text
from bot.jobs import JobKind
from tests.bot.intake.test_triggers import (
    Payload,
    issue_comment,
    issue_opened,
    one,
    review,
    review_comment,
    run,
)


@pytest.mark.parametrize(
    "body",
    [
        "@neo steer use ISO dates",
        "@NEO Steer: use ISO dates",
        "@neo, steer - use ISO dates",
        "  @neo   steer\n\nuse ISO dates\n\n```\nand this code\n```",
        "> the run is going the wrong way\n\n@neo steer use ISO dates",
        "<!-- from my phone -->\n@neo steer use ISO dates",
        "@neo steer",
    ],
)
@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("issue_comment", issue_comment),
        ("pull_request_review_comment", review_comment),
        ("pull_request_review", review),
    ],
)
def test_a_post_that_starts_with_steer_is_a_steer(
    body: str, event: str, payload: Callable[[str], Payload]
) -> None:
    request = one(run(event, payload(body)))
    assert request.kind is JobKind.STEER
    assert request.lane == "cancel"  # claimable while the thread's run goes on
    assert request.instruction == body


@pytest.mark.parametrize(
    "body",
    [
        "@neo please steer the parser towards ISO dates",
        "Hi! @neo steer use ISO dates",
        "Thanks.\n\n@neo steer use ISO dates",
        "@neo steering is broken, fix it",
        "@neo steer-wheel module needs a test",
        "`@neo steer` is not a mention here, @neo fix the docs",
        "steer @neo",
    ],
)
def test_steer_anywhere_but_at_the_start_is_an_ordinary_request(body: str) -> None:
    assert one(run("issue_comment", issue_comment(body))).kind is JobKind.TASK


def test_an_issue_opened_with_steer_is_a_task() -> None:
    assert one(run("issues", issue_opened("@neo steer use ISO dates"))).kind is JobKind.TASK


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("@neo steer use ISO dates", "use ISO dates"),
        ("@Neo, steer: use ISO dates\n\nand keep `old()`.\n", "use ISO dates\n\nand keep `old()`."),
        ("  @neo steer\n\n- one\n- two", "- one\n- two"),
        ("@neo steer", ""),
    ],
)
def test_the_steer_is_what_follows_the_opening_words(body: str, said: str) -> None:
    assert steer_text(body, "@neo") == said
