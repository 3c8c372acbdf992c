"""Which reviews on the App's own pull request make a job without a mention (pure triage
over real corpus payloads): one that requests changes; nothing else."""

from __future__ import annotations

import pytest

from bot.intake.triggers import Ignore, Reason
from bot.jobs import JobKind
from tests.bot.intake.test_triggers import RULES, Payload, example, one, run


def own_review(state: str, body: str | None = "Please split this function.") -> Payload:
    p = example("pull_request_review", "submitted")
    p["review"]["state"] = state
    p["review"]["body"] = body
    p["pull_request"]["user"] = {"login": RULES.app_bot_login, "type": "Bot"}
    return p


@pytest.mark.parametrize("state", ["changes_requested", "CHANGES_REQUESTED"])
@pytest.mark.parametrize("body", ["Please split this function.", "", None])
def test_changes_requested_on_the_apps_pull_request_makes_a_task(
    state: str, body: str | None
) -> None:
    p = own_review(state, body)
    request = one(run("pull_request_review", p))
    assert request.kind is JobKind.TASK
    assert request.event == "pull_request_review.submitted"
    assert request.thread.is_pull_request
    assert request.thread.number == p["pull_request"]["number"]
    assert request.trigger_id == p["review"]["id"]
    assert request.dedupe_key == f"review:{p['review']['id']}"
    # An empty body: the review's inline comments are the instruction, read by the worker.
    assert request.instruction == (body or "")


def test_changes_requested_on_someone_elses_pull_request_needs_the_mention() -> None:
    p = own_review("changes_requested")
    p["pull_request"]["user"] = {"login": "octocat", "type": "User"}
    assert run("pull_request_review", p) == Ignore(Reason.NO_MENTION)
    p["review"]["body"] = "@neo split this function"
    assert one(run("pull_request_review", p)).instruction == "@neo split this function"


@pytest.mark.parametrize("state", ["approved", "commented", "dismissed"])
def test_other_reviews_of_the_apps_pull_request_need_the_mention(state: str) -> None:
    assert run("pull_request_review", own_review(state)) == Ignore(Reason.NO_MENTION)
    mentioned = own_review(state, "@neo also rename it")
    assert one(run("pull_request_review", mentioned)).instruction == "@neo also rename it"


def test_changes_requested_by_the_app_or_another_bot_is_ignored() -> None:
    p = own_review("changes_requested")
    p["review"]["user"] = p["sender"] = {"login": RULES.app_bot_login, "type": "Bot"}
    assert run("pull_request_review", p) == Ignore(Reason.SELF)
    p["review"]["user"] = p["sender"] = {"login": "coderabbitai[bot]", "type": "Bot"}
    assert run("pull_request_review", p) == Ignore(Reason.BOT)


def test_changes_requested_that_mentions_the_app_reads_as_a_mention() -> None:
    # "@neo stop" in a changes-requested review still stops the work.
    assert one(run("pull_request_review", own_review("changes_requested", "@neo stop"))).kind is (
        JobKind.STOP
    )


def test_a_locked_pull_request_is_ignored_even_for_its_own_author() -> None:
    p = own_review("changes_requested")
    p["pull_request"]["locked"] = True
    assert run("pull_request_review", p) == Ignore(Reason.LOCKED)
