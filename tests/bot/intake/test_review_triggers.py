"""Which deliveries ask for a review: `@neo review` on a pull request, the review label,
a review request for the App (pure triage over real corpus payloads)."""

from __future__ import annotations

import pytest

from bot.intake.triggers import Ignore, Reason, Rules
from bot.jobs import JobKind, TriggerKind
from tests.bot.intake.test_triggers import RULES, example, issue_comment, one, run


@pytest.mark.parametrize(
    ("body", "pr", "mode"),
    [
        ("@neo review", True, "review"),
        ("@NEO Review, with an eye on the tests", True, "review"),
        ("@neo: review please", True, "review"),
        ("Thanks!\n\n@neo review", True, "review"),
        ("@neo review", False, "task"),  # an issue has nothing to review
        ("@neo please review the docs and fix them", True, "task"),  # not the first word
        ("@neo reviewer notes: fix the typo", True, "task"),
        ("`@neo review`", True, None),  # code: no mention at all
    ],
)
def test_review_is_the_first_word_after_the_mention_on_a_pull_request(
    body: str, pr: bool, mode: str | None
) -> None:
    result = run("issue_comment", issue_comment(body, pr=pr))
    if mode is None:
        assert result == Ignore(Reason.NO_MENTION)
    else:
        assert one(result).kind == mode


def test_the_review_label_on_a_pull_request_asks_for_a_review() -> None:
    p = example("pull_request", "labeled")
    p["label"]["name"] = "Neo-Review"  # label names are case-insensitive
    request = one(run("pull_request", p, delivery_id="d-7"))
    assert request.kind is JobKind.REVIEW
    assert request.thread.is_pull_request
    assert request.thread.number == p["pull_request"]["number"]
    assert request.trigger_id == p["pull_request"]["id"]
    pull = p["pull_request"]
    assert request.dedupe_key == f"review-label:{pull['id']}:neo-review:{pull['updated_at']}"


def test_another_label_on_a_pull_request_is_ignored() -> None:
    p = example("pull_request", "labeled")
    assert run("pull_request", p) == Ignore(Reason.OTHER_LABEL)
    p["label"]["name"] = "neo"  # the issue label: a pull request asks for a review by its own
    assert run("pull_request", p) == Ignore(Reason.OTHER_LABEL)


def test_requesting_the_apps_review_asks_for_a_review_and_someone_elses_does_not() -> None:
    p = example("pull_request", "review_requested")
    assert run("pull_request", p) == Ignore(Reason.OTHER_ASSIGNEE)
    p["requested_reviewer"] = {**p["requested_reviewer"], "login": RULES.app_bot_login}
    request = one(run("pull_request", p))
    assert (request.kind, request.trigger) == (JobKind.REVIEW, TriggerKind.REVIEW_REQUESTED)
    # A team asked: no reviewer login, nothing for Neo.
    del p["requested_reviewer"]
    p["requested_team"] = {"name": "core"}
    assert run("pull_request", p) == Ignore(Reason.OTHER_ASSIGNEE)


def test_the_app_labelling_its_own_pull_request_makes_no_job() -> None:
    p = example("pull_request", "labeled")
    p["label"]["name"] = "neo-review"
    p["sender"] = {**p["sender"], "login": RULES.app_bot_login, "type": "Bot"}
    assert run("pull_request", p) == Ignore(Reason.SELF)


def test_an_empty_review_label_is_refused() -> None:
    with pytest.raises(ValueError, match="review_label must not be empty"):
        Rules(app_bot_login="neo[bot]", review_label=" ")
