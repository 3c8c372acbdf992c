"""The octokit corpus through one real `neo serve` process.

Every payload of `@octokit/webhooks-examples` (vendored under tests/fixtures/)
is signed and posted with its event name and a delivery id of its own: GitHub
never gets a 5xx. Then the payloads Neo acts on, patched the least that makes
it act, must make exactly the jobs the triage rules promise, as `neo jobs
list --format json` shows them. Each test names its deliveries with a prefix
of its own and looks only at those jobs, so the tests share one server in
any order.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from bot.intake.server import WEBHOOK_PATH
from bot.intake.triggers import ACTED_ON, Reason
from tests.bot.serving import (
    CI_EVENTS,
    NEO,
    Server,
    ci_head_branch,
    ci_object,
    corpus,
    headers,
    make_it_act,
    neo_serve_alone,
)

Payload = dict[str, Any]

# What a corpus payload may be ignored for: never "malformed payload", which
# would mean the server misreads a shape GitHub really sends.
EXPECTED_REASONS = {
    Reason.NOT_ACTED_ON,
    Reason.NOT_RED,
    Reason.NO_PULL_REQUEST,
    Reason.NO_MENTION,
    Reason.NO_NEW_MENTION,
    Reason.OTHER_LABEL,
    Reason.OTHER_ASSIGNEE,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The fake GitHub's App is "neo": its bot user is neo[bot].
    with neo_serve_alone(tmp_path_factory.mktemp("corpus")) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as session:
        yield session


def post(
    client: httpx.Client, event: str, payload: Payload, delivery: str, *, form: bool = False
) -> httpx.Response:
    if form:
        body = b"payload=" + quote(json.dumps(payload)).encode()
        sent = {
            **headers(event, body, delivery),
            "content-type": "application/x-www-form-urlencoded",
        }
    else:
        body = json.dumps(payload).encode()
        sent = headers(event, body, delivery)
    return client.post(WEBHOOK_PATH, content=body, headers=sent)


def jobs(server: Server, prefix: str) -> list[dict[str, Any]]:
    """The jobs made by deliveries whose id starts with `prefix`, oldest first."""
    done = subprocess.run(
        [str(NEO), "jobs", "list", "--format", "json", "--limit", "100000"],
        env=dict(server.env),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed: list[dict[str, Any]] = json.loads(done.stdout)
    return sorted(
        (job for job in listed if job["request"]["delivery_id"].startswith(prefix)),
        key=lambda job: job["id"],
    )


# --- every payload, as GitHub sends it -------------------------------------------


@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_every_corpus_payload_is_answered_2xx_and_queues_only_the_red_check(
    server: Server, client: httpx.Client, form: bool
) -> None:
    prefix = f"corpus-{'form' if form else 'json'}-"
    decisions: dict[str, int] = {}
    repairs = 0
    for index, (event, payload) in enumerate(corpus()):
        answer = post(client, event, payload, f"{prefix}{index}", form=form)

        where = f"{event}.{payload.get('action')} (corpus #{index}): {answer.text}"
        assert 200 <= answer.status_code < 300, where
        decision = answer.json()["decision"]
        decisions[decision] = decisions.get(decision, 0) + 1
        if event == "ping":
            assert (answer.status_code, decision) == (200, "ping"), where
        elif red_on_a_pull_request(event, payload):
            # The corpus has one: a failed check run on its pull request's branch.
            assert (answer.status_code, decision) == (202, "queued"), where
            repairs += 1
        else:
            # No corpus payload mentions @neo, carries the neo label or is
            # assigned to neo[bot]: each is triaged and ignored.
            assert (answer.status_code, decision) == (202, "ignored"), where
            assert answer.json()["reason"] in EXPECTED_REASONS, where

    assert sum(decisions.values()) == len(corpus()) == 329
    assert decisions["ping"] == sum(1 for event, _ in corpus() if event == "ping")
    assert repairs == 1
    # One repair, whichever form carried it first: the second is the same red commit.
    assert [job["request"]["kind"] for job in jobs(server, "corpus-")] == ["repair"]
    assert httpx.get(f"{server.url}/healthz").json() == {"ok": True}


# --- the payloads Neo acts on, patched to act ------------------------------------


def acting() -> list[tuple[str, Payload]]:
    """Every acted-on corpus payload, patched to act."""
    return [
        (event, make_it_act(event, copy.deepcopy(payload)))
        for event, payload in corpus()
        if f"{event}.{payload.get('action')}" in ACTED_ON
    ]


def red_on_a_pull_request(event: str, p: Payload) -> bool:
    if event not in CI_EVENTS or p.get("action") != "completed":
        return False
    run = ci_object(event, p)
    branch = ci_head_branch(event, p)
    return run["conclusion"] in ("failure", "timed_out") and any(
        pr["head"]["ref"] == branch and pr["head"]["repo"]["id"] == p["repository"]["id"]
        for pr in run["pull_requests"]
    )


def expected_repair(event: str, p: Payload, delivery: str) -> Payload:
    """The repair a red CI completion asks for, written out independently."""
    run = ci_object(event, p)
    sha = run["head_sha"]
    if event == "check_run":
        what = f'the check run "{run["name"]}"'
    elif event == "check_suite":
        what = f'the check suite of "{run["app"]["name"]}"'
    else:
        what = f'the workflow run "{run.get("name") or "unnamed"}"'

    return {
        "kind": "repair",
        "thread": {
            "repository": p["repository"]["full_name"],
            "number": run["pull_requests"][0]["number"],
            "is_pull_request": True,
        },
        "installation_id": (p.get("installation") or {}).get("id"),
        "event": f"{event}.completed",
        "trigger": f"{event}.completed",
        "trigger_id": run["id"],
        "author": p["sender"]["login"],
        "author_association": "NONE",
        "instruction": f"CI failed on {sha}: {what} ended {run['conclusion']}.",
        "dedupe_key": f"ci-repair:{p['repository']['full_name'].lower()}:{sha}",
        "delivery_id": delivery,
        "branch": None,
        "instruction_from_workflow": False,
        "head_sha": sha,
    }


def expected_request(event: str, p: Payload, delivery: str) -> Payload:
    """The job request the triage rules promise for `p`, written out independently."""
    action = p["action"]
    if event in CI_EVENTS:
        return expected_repair(event, p, delivery)
    if event in ("issue_comment", "pull_request_review_comment", "pull_request_review"):
        trigger = p["review"] if event == "pull_request_review" else p["comment"]
        prefix = {
            "issue_comment": "issue_comment",
            "pull_request_review_comment": "review_comment",
            "pull_request_review": "review",
        }[event]
        instruction = trigger["body"]
        dedupe_key = f"{prefix}:{trigger['id']}"
    elif event == "pull_request":
        # The review label or a review request: a review, keyed by the event (what was
        # asked, and when), never by the delivery id, which a replay changes.
        trigger = p["pull_request"]
        instruction = f"{trigger['title']}\n\n{trigger['body'] or ''}".rstrip()
        if action == "labeled":
            key, what = "review-label", str(p["label"]["name"])
        else:
            key, what = "review-requested", str(p["requested_reviewer"]["login"])
        dedupe_key = f"{key}:{trigger['id']}:{what.lower()}:{trigger['updated_at']}"
    else:
        trigger = p["issue"]
        instruction = f"{trigger['title']}\n\n{trigger['body'] or ''}".rstrip()
        if action == "opened":
            dedupe_key = f"issues.opened:{trigger['id']}"
        elif action == "edited":
            digest = hashlib.sha256(trigger["body"].encode()).hexdigest()[:16]
            dedupe_key = f"issues.edited:{trigger['id']}:{digest}"
        else:
            # A label or an assignment: keyed by the event (what, and when).
            what = p["label"]["name"] if action == "labeled" else p["assignee"]["login"]
            dedupe_key = f"{action}:{trigger['id']}:{what.lower()}:{trigger['updated_at']}"
    if "issue" in p:
        thread = {
            "repository": p["repository"]["full_name"],
            "number": p["issue"]["number"],
            "is_pull_request": p["issue"].get("pull_request") is not None,
        }
    else:
        thread = {
            "repository": p["repository"]["full_name"],
            "number": p["pull_request"]["number"],
            "is_pull_request": True,
        }
    return {
        "kind": "review" if event == "pull_request" else "task",
        "thread": thread,
        "installation_id": (p.get("installation") or {}).get("id"),
        "event": f"{event}.{action}",
        "trigger": f"{event}.{action}",
        "trigger_id": trigger["id"],
        "author": p["sender"]["login"],
        "author_association": trigger["author_association"],
        "instruction": instruction,
        "dedupe_key": dedupe_key,
        "delivery_id": delivery,
        # Only a schedule names the branch; triage leaves it to the worker.
        "branch": None,
        # A webhook's instruction is its author's text, never a workflow's prompt.
        "instruction_from_workflow": False,
        "head_sha": None,
    }


def test_acted_on_payloads_make_exactly_the_expected_jobs(
    server: Server, client: httpx.Client
) -> None:
    prefix = "acting-"
    deliveries = [(f"{prefix}{n}", event, p) for n, (event, p) in enumerate(acting())]
    # Some corpus examples repeat a comment, review or issue body: one job per
    # dedupe key, made by the first delivery that carries it.
    expected: dict[str, Payload] = {}
    answered: dict[str, list[int]] = {}
    for delivery, event, p in deliveries:
        request = expected_request(event, p, delivery)
        expected.setdefault(request["dedupe_key"], request)
        answer = post(client, event, p, delivery)
        assert answer.status_code == 202, answer.text
        assert answer.json()["decision"] == "queued", answer.text
        answered[delivery] = answer.json()["jobs"]

    listed = jobs(server, prefix)

    assert len(deliveries) >= 20
    assert len(expected) < len(deliveries), "the corpus repeats some triggers"
    assert [job["request"] for job in listed] == list(expected.values())
    assert all(job["state"] == "queued" and job["attempts"] == 0 for job in listed)
    # Each answer named the one job its trigger has, new or existing.
    by_key = {job["request"]["dedupe_key"]: job["id"] for job in listed}
    for delivery, event, p in deliveries:
        key = expected_request(event, p, delivery)["dedupe_key"]
        assert answered[delivery] == [by_key[key]], delivery


def test_redeliveries_and_new_deliveries_of_the_same_triggers(
    server: Server, client: httpx.Client
) -> None:
    prefix = "again-"
    deliveries = [(f"{prefix}{n}", event, p) for n, (event, p) in enumerate(acting())]
    first: dict[str, list[int]] = {}
    for delivery, event, p in deliveries:
        answer = post(client, event, p, delivery).json()
        assert answer["decision"] == "queued"
        first[delivery] = answer["jobs"]
    before = jobs(server, prefix)

    # GitHub's "redeliver" sends the same delivery id: nothing is queued.
    for delivery, event, p in deliveries:
        answer = post(client, event, p, delivery)
        assert (answer.status_code, answer.json()["decision"]) == (202, "duplicate")
    assert jobs(server, prefix) == before

    # The same signed bodies under new delivery ids (the id is not signed:
    # anyone holding a delivery can replay it) are the same events, labels,
    # assignments and review requests too: no new job, the existing one named.
    for delivery, event, p in deliveries:
        answer = post(client, event, p, delivery + "-new")
        assert (answer.status_code, answer.json()["decision"]) == (202, "queued")
        assert answer.json()["jobs"] == first[delivery], delivery
    assert jobs(server, prefix) == before

    # A label, an assignment or a review request made again later (GitHub moves
    # the thread's updated_at) is a new request.
    later = [
        (f"{delivery}-later", event, later_event(p))
        for delivery, event, p in deliveries
        if p["action"] in ("labeled", "assigned", "review_requested")
    ]
    for delivery, event, p in later:
        assert post(client, event, p, delivery).json()["decision"] == "queued"
    made = [job for job in jobs(server, prefix) if job["request"]["delivery_id"].endswith("-later")]
    keys = {expected_request(event, p, delivery)["dedupe_key"] for delivery, event, p in later}
    assert sorted(job["request"]["dedupe_key"] for job in made) == sorted(keys)
    assert len(keys) >= 3  # a label, an assignment, a review request


def later_event(p: Payload) -> Payload:
    """`p` as GitHub sends the same change made again a minute later."""
    p = copy.deepcopy(p)
    thread = p["issue"] if "issue" in p else p["pull_request"]
    thread["updated_at"] = "2030-01-01T00:01:00Z"
    return p


def test_stop_is_queued_for_a_worker_to_check_and_cancels_nothing_on_the_request_path(
    server: Server, client: httpx.Client
) -> None:
    event, p = next((e, p) for e, p in acting() if e == "issue_comment")
    # A thread and comments of their own: the other tests queue the corpus's.
    p["issue"]["number"] = 4242
    p["comment"]["id"] = 4_242_000_001
    p["comment"]["body"] = "@neo fix the flaky date test"
    stop = copy.deepcopy(p)
    stop["comment"]["id"] = 4_242_000_002
    stop["comment"]["body"] = "@neo stop"

    run = post(client, event, p, "stop-run").json()
    cancel = post(client, event, stop, "stop-cancel").json()

    assert run["decision"] == cancel["decision"] == "queued"
    listed = {job["request"]["delivery_id"]: job for job in jobs(server, "stop-")}
    # Whether its author may stop anything needs GitHub: a worker decides.
    assert listed["stop-run"]["state"] == "queued"
    assert listed["stop-cancel"]["request"]["kind"] == "stop"
    assert (
        listed["stop-cancel"]["request"]["dedupe_key"] == f"issue_comment:{stop['comment']['id']}"
    )
    assert listed["stop-cancel"]["state"] == "queued"
    assert listed["stop-cancel"]["result"] is None


def test_the_server_logged_no_error_and_no_5xx(server: Server) -> None:
    text = Path(server.log).read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert "Traceback" not in text
    assert lines[0]["event"] == "started"
    assert all(line["status"] < 500 for line in lines if "status" in line)
