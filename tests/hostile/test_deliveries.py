"""Hostile deliveries: values no GitHub would send, and mentions GitHub shows as
code or quote, none of which may make a job.

Every row starts from a real payload of `@octokit/webhooks-examples`
(tests/fixtures/), patched the least that makes Neo act on it; the tests of
the first two tables check that this base payload makes a job, then set one
field and check the outcome.

To add a row, append a `pytest.param` to a table:

- IMPLAUSIBLE: `(event, action, path, value)` with `path` the dotted field
  (`repository.full_name`, `comment.user.login`) and `value` what a forged
  delivery puts there; triage must ignore it as "implausible payload".
- PLAUSIBLE: the same, for an unusual value GitHub does send (`ABSENT`: the
  field left out, as GitHub may for one it marks optional); it must still
  make a job.
- HIDDEN_MENTIONS: a comment body whose every `@neo` GitHub renders as code,
  inside a quote or not at all; it must make no job ("no mention").
- SHOWN_MENTIONS: a body where GitHub shows a mention; it must make a job.

CI completions (CHECK, SUITE, FLOW) are patched to fail on their pull
request's branch, which makes a repair job.

Give each row an `id=` that says what it is.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.intake.server import WEBHOOK_PATH
from bot.intake.triggers import Ignore, Reason, Rules, triage
from bot.intake.webhooks import Delivery
from bot.jobs import JobRequest
from tests.bot.serving import (
    NEO,
    Server,
    corpus,
    headers,
    make_it_act,
    neo_serve_alone,
)

Payload = dict[str, Any]

RULES = Rules(app_bot_login="neo[bot]")


def acting(event: str, action: str) -> Payload:
    """A corpus payload of `event.action` (one from an installation, if any),
    patched to make Neo act."""
    found = [p for name, p in corpus() if name == event and p.get("action") == action]
    assert found, f"no {event}.{action} in the corpus"
    found.sort(key=lambda p: "installation" not in p)
    return make_it_act(event, copy.deepcopy(found[0]))


ABSENT = object()  # a `patched` value: leave the field out


def patched(payload: Payload, path: str, value: object) -> Payload:
    *parents, last = path.split(".")
    target: Any = payload
    for key in parents:
        # A digit under a list is an index: `check_run.pull_requests.0.number`.
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is ABSENT:
        target.pop(last, None)
    else:
        target[last] = value
    return payload


def triaged(event: str, payload: Payload) -> list[JobRequest] | Ignore:
    action = payload.get("action")
    delivery = Delivery(
        event=event,
        delivery_id="hostile-1",
        action=action if isinstance(action, str) else None,
        payload=payload,
    )
    return triage(delivery, RULES)


def makes_a_job(outcome: list[JobRequest] | Ignore) -> bool:
    return isinstance(outcome, list) and len(outcome) == 1 and outcome[0].lane == "run"


# --- values no GitHub sends -----------------------------------------------------

IC = ("issue_comment", "created")
OPENED = ("issues", "opened")
REVIEW_COMMENT = ("pull_request_review_comment", "created")
REVIEW = ("pull_request_review", "submitted")
CHECK = ("check_run", "completed")
SUITE = ("check_suite", "completed")
FLOW = ("workflow_run", "completed")

IMPLAUSIBLE = [
    pytest.param(*IC, "repository.full_name", "Hello-World", id="repository without owner"),
    pytest.param(*IC, "repository.full_name", "/Hello-World", id="repository with empty owner"),
    pytest.param(*IC, "repository.full_name", "Codertocat/", id="repository with empty name"),
    pytest.param(*IC, "repository.full_name", "Codertocat/..", id="repository named .."),
    pytest.param(*IC, "repository.full_name", "Codertocat/.", id="repository named ."),
    pytest.param(*IC, "repository.full_name", "../Hello-World", id="owner .."),
    pytest.param(*IC, "repository.full_name", "Codertocat/../../etc", id="path traversal"),
    pytest.param(*IC, "repository.full_name", "a/b/c", id="three path segments"),
    pytest.param(*IC, "repository.full_name", "Codertocat/Hello\0World", id="NUL in repository"),
    pytest.param(*IC, "repository.full_name", "Codertocat/Hello-World\n", id="newline in repo"),
    pytest.param(*IC, "repository.full_name", "Coder tocat/x", id="space in owner"),
    pytest.param(*IC, "repository.full_name", "Codertocat/Hello~World", id="tilde in name"),
    pytest.param(*IC, "repository.full_name", "a" * 40 + "/x", id="owner of 40 characters"),
    pytest.param(*IC, "repository.full_name", "a/" + "x" * 101, id="name of 101 characters"),
    pytest.param(*IC, "repository.full_name", "", id="empty repository"),
    pytest.param(*IC, "issue.number", 0, id="issue number 0 (a schedule's)"),
    pytest.param(*OPENED, "issue.number", -1, id="negative issue number"),
    pytest.param(*REVIEW_COMMENT, "pull_request.number", 0, id="pull request number 0"),
    pytest.param(*REVIEW, "pull_request.number", -7, id="negative pull request number"),
    pytest.param(*IC, "comment.id", 0, id="comment id 0"),
    pytest.param(*REVIEW, "review.id", -1, id="negative review id"),
    pytest.param(*OPENED, "issue.id", 0, id="issue id 0"),
    pytest.param(*IC, "installation.id", 0, id="installation id 0"),
    pytest.param(
        *IC, "sender.login", "Codertocat\nCo-authored-by: x <x@x>", id="newline in sender login"
    ),
    pytest.param(*IC, "comment.user.login", "Codertocat\r", id="carriage return in author login"),
    pytest.param(*OPENED, "sender.login", "Codertocat\0", id="NUL in sender login"),
    pytest.param(*IC, "sender.login", "Coder tocat", id="space in login"),
    pytest.param(*IC, "sender.login", "", id="empty login"),
    pytest.param(*IC, "sender.login", "a" * 40, id="login of 40 characters"),
    pytest.param(*IC, "sender.login", "../../x", id="path in login"),
    pytest.param(*REVIEW, "review.user.login", "x[bot]\n", id="newline after [bot]"),
    pytest.param(*IC, "comment.author_association", "OWNER\n", id="newline in association"),
    pytest.param(*IC, "sender.type", "User\x1b[31m", id="escape sequence in user type"),
    pytest.param(*CHECK, "check_run.head_sha", "HEAD", id="a ref for a head sha"),
    pytest.param(*CHECK, "check_run.head_sha", "a" * 39, id="a sha one digit short"),
    pytest.param(*CHECK, "check_run.head_sha", "-" + "a" * 39, id="an option for a sha"),
    pytest.param(*SUITE, "check_suite.head_sha", "A" * 40, id="an upper-case sha"),
    pytest.param(*FLOW, "workflow_run.head_sha", "a" * 40 + "\n", id="newline after a sha"),
    pytest.param(*CHECK, "check_run.id", 0, id="check run id 0"),
    pytest.param(*CHECK, "check_run.pull_requests.0.number", 0, id="pull request 0 of a check"),
    pytest.param(*FLOW, "repository.id", -1, id="negative repository id"),
]


@pytest.mark.parametrize(("event", "action", "path", "value"), IMPLAUSIBLE)
def test_implausible_deliveries_are_refused_at_triage(
    event: str, action: str, path: str, value: object
) -> None:
    payload = acting(event, action)
    assert makes_a_job(triaged(event, copy.deepcopy(payload)))

    assert triaged(event, patched(payload, path, value)) == Ignore(Reason.IMPLAUSIBLE)


def test_a_wrong_shape_stays_malformed_beside_an_implausible_value() -> None:
    payload = patched(acting(*IC), "issue.number", 0)
    del payload["comment"]["id"]
    assert triaged("issue_comment", payload) == Ignore(Reason.MALFORMED)


# --- unusual values GitHub does send ----------------------------------------------

PLAUSIBLE = [
    # Accounts from before ~2013 begin, end or repeat hyphens; Enterprise
    # Managed Users have an underscore and a short code.
    pytest.param(*IC, "sender.login", "-ACE-", id="legacy login with hyphens at the ends"),
    pytest.param(*IC, "sender.login", "0----0", id="legacy login with repeated hyphens"),
    pytest.param(*IC, "sender.login", "mona_octo", id="managed user login"),
    pytest.param(*IC, "sender.login", "p", id="one-letter login"),
    pytest.param(*IC, "sender.login", "a" * 39, id="login of 39 characters"),
    pytest.param(*IC, "repository.full_name", "Codertocat/.github", id="the .github repository"),
    pytest.param(*IC, "repository.full_name", "mona_octo/a.b_c-d", id="every name character"),
    pytest.param(*IC, "repository.full_name", "a" * 39 + "/" + "x" * 100, id="longest name"),
    pytest.param(*IC, "issue.number", 2**31, id="a large issue number"),
    pytest.param(*IC, "comment.id", 2**63 - 1, id="the largest id"),
    pytest.param(*IC, "comment.author_association", "FIRST_TIME_CONTRIBUTOR", id="association"),
    # Optional or nullable in GitHub's webhook schema.
    pytest.param(*IC, "issue.user", None, id="issue by a deleted account"),
    pytest.param(*OPENED, "issue.user", None, id="opened issue without its user"),
    pytest.param(*IC, "comment.user", None, id="comment by a deleted account"),
    pytest.param(*REVIEW_COMMENT, "comment.user", None, id="review comment by a deleted account"),
    pytest.param(*REVIEW, "review.user", None, id="review by a deleted account"),
    pytest.param(*IC, "issue.locked", ABSENT, id="issue without locked"),
    pytest.param(*OPENED, "issue.locked", None, id="opened issue with null locked"),
    pytest.param(*REVIEW_COMMENT, "pull_request.locked", ABSENT, id="pull request without locked"),
    pytest.param(*IC, "issue.author_association", ABSENT, id="issue without association"),
    pytest.param(*IC, "comment.author_association", ABSENT, id="comment without association"),
    pytest.param(*OPENED, "issue.author_association", None, id="issue with null association"),
    pytest.param(*REVIEW, "review.author_association", ABSENT, id="review without association"),
]


@pytest.mark.parametrize(("event", "action", "path", "value"), PLAUSIBLE)
def test_unusual_values_github_sends_still_make_a_job(
    event: str, action: str, path: str, value: object
) -> None:
    assert makes_a_job(triaged(event, patched(acting(event, action), path, value)))


# --- mentions GitHub shows as code or quote --------------------------------------

HIDDEN_MENTIONS = [
    pytest.param("Output:\n\n    @neo fix it", id="indented code"),
    pytest.param("    @neo fix it", id="indented code first"),
    pytest.param("- item\n\n      @neo fix it", id="indented code in a list item"),
    pytest.param("  - item\n\n        @neo fix it", id="indented code in a nested list item"),
    pytest.param("run <code>@neo fix</code> to start", id="<code> element"),
    pytest.param('<code class="x">@neo</code> fix it', id="<code> with attributes"),
    pytest.param("<CODE>@neo</CODE> fix it", id="<CODE> upper case"),
    pytest.param("<code>@neo fix it", id="unclosed <code> to the paragraph's end"),
    pytest.param("text <pre>@neo</pre> more", id="<pre> inline"),
    pytest.param("<pre>\n@neo fix it\n</pre>", id="<pre> block"),
    pytest.param("<pre>\n\n@neo fix it\n\n</pre>", id="<pre> block over blank lines"),
    pytest.param("<div>\n<code>@neo fix it</code>\n</div>", id="<code> in an HTML block"),
    pytest.param("> earlier comment\n@neo do it", id="lazy quote continuation"),
    pytest.param(">> nested\n@neo do it", id="lazy continuation of a nested quote"),
    pytest.param("- > @neo fix it", id="quote in a list item"),
    pytest.param("1. > @neo fix it", id="quote in an ordered list item"),
    pytest.param("* a\n\n  > b\n  @neo lazy", id="lazy continuation in a list's quote"),
    pytest.param("\\@neo fix it", id="backslash-escaped"),
    pytest.param("please \\@neo fix it", id="backslash-escaped mid-sentence"),
]

SHOWN_MENTIONS = [
    pytest.param("@neo fix it", id="plain"),
    pytest.param("> earlier comment\n\n@neo do it", id="after a quote and a blank line"),
    pytest.param("    code\n@neo fix it", id="after indented code"),
    pytest.param("<code>x</code> @neo fix it", id="after a <code> element"),
    pytest.param('<img src="shot.png">\n@neo fix this layout', id="in an HTML block"),
    pytest.param("<details>\n<summary>@neo fix it</summary>\n</details>", id="in <details>"),
    pytest.param("<b>@neo</b> fix it", id="in bold HTML"),
    pytest.param("\\\\@neo fix it", id="after an escaped backslash"),
    pytest.param("- item\n\n  @neo fix it", id="in a list item's paragraph"),
    pytest.param("text <!-- a note --> @neo fix it", id="after an inline HTML comment"),
]

MENTION_EVENTS = [
    pytest.param(("issue_comment", "created", "comment.body"), id="comment"),
    pytest.param(("pull_request_review", "submitted", "review.body"), id="review"),
]


@pytest.mark.parametrize("where", MENTION_EVENTS)
@pytest.mark.parametrize("body", HIDDEN_MENTIONS)
def test_mentions_github_shows_as_code_or_quote_make_no_job(
    body: str, where: tuple[str, str, str]
) -> None:
    event, action, path = where
    assert triaged(event, patched(acting(event, action), path, body)) == Ignore(Reason.NO_MENTION)


@pytest.mark.parametrize("where", MENTION_EVENTS)
@pytest.mark.parametrize("body", SHOWN_MENTIONS)
def test_mentions_github_shows_make_a_job(body: str, where: tuple[str, str, str]) -> None:
    event, action, path = where
    assert makes_a_job(triaged(event, patched(acting(event, action), path, body)))


# --- through a real `neo serve` ------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with neo_serve_alone(tmp_path_factory.mktemp("hostile-deliveries")) as running:
        yield running


def queued_jobs(server: Server) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(NEO), "jobs", "list", "--format", "json"],
        env=dict(server.env),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed: list[dict[str, Any]] = json.loads(done.stdout)
    return listed


def ignored_count(server: Server, event: str) -> float:
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    found = re.search(
        rf'^neo_webhook_deliveries_total\{{decision="ignored",event="{event}"\}} (\S+)$',
        metrics,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize(
    ("event", "action", "path", "value"),
    [
        pytest.param(*IC, "repository.full_name", "Codertocat/..", id="repository named .."),
        pytest.param(*IC, "issue.number", 0, id="issue number 0"),
        pytest.param(*IC, "sender.login", "Codertocat\nx", id="newline in sender login"),
    ],
)
def test_the_server_answers_logs_and_counts_the_refusal(
    server: Server, event: str, action: str, path: str, value: object
) -> None:
    delivery = f"hostile-{path}-{value!r}".encode().hex()[:64]
    body = json.dumps(patched(acting(event, action), path, value)).encode()
    before = ignored_count(server, event)

    answer = httpx.post(
        f"{server.url}{WEBHOOK_PATH}", content=body, headers=headers(event, body, delivery)
    )

    assert answer.status_code == 202, answer.text
    assert answer.json()["decision"] == "ignored"
    assert answer.json()["reason"] == Reason.IMPLAUSIBLE
    assert ignored_count(server, event) == before + 1
    logged = [
        json.loads(line)
        for line in Path(server.log).read_text().splitlines()
        if line.startswith("{") and delivery in line
    ]
    assert [(line["decision"], line.get("reason")) for line in logged] == [
        ("ignored", "implausible payload")
    ]
    assert not [job for job in queued_jobs(server) if job["request"]["delivery_id"] == delivery]


@pytest.mark.parametrize(
    ("event", "action", "thread_id"),
    [
        pytest.param("issues", "labeled", 990_001, id="label"),
        pytest.param("issues", "assigned", 990_002, id="assignment"),
        pytest.param("pull_request", "labeled", 990_003, id="review label"),
        pytest.param("pull_request", "review_requested", 990_004, id="review request"),
    ],
)
def test_a_signed_delivery_replayed_under_fresh_ids_makes_one_job(
    server: Server, event: str, action: str, thread_id: int
) -> None:
    """GitHub signs the body, not the delivery id: whoever holds one delivery (a log, a
    proxy) can send it again under new ids. Each replay must not be a paid job."""
    payload = acting(event, action)
    # A thread of its own, so the other rows' jobs are not this one's.
    thread = payload["issue"] if event == "issues" else payload["pull_request"]
    thread["id"] = thread_id
    body = json.dumps(payload).encode()
    replays = [f"replay-{event}-{action}-{n}" for n in range(5)]

    answers = [
        httpx.post(f"{server.url}{WEBHOOK_PATH}", content=body, headers=headers(event, body, d))
        for d in replays
    ]

    assert [a.status_code for a in answers] == [202] * 5
    assert {tuple(a.json()["jobs"]) for a in answers} == {tuple(answers[0].json()["jobs"])}
    made = [job for job in queued_jobs(server) if job["request"]["delivery_id"] in replays]
    assert [job["request"]["delivery_id"] for job in made] == [replays[0]]
