"""bot.intake.triggers: the triage table, the tricky mentions, and the octokit corpus.

Payloads are real ones from `@octokit/webhooks-examples` (vendored under
tests/fixtures/), copied and patched, so the shapes are GitHub's.
"""

from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.intake.mentions import mentions
from bot.intake.triggers import ACTED_ON, Ignore, Reason, Rules, triage
from bot.intake.webhooks import Delivery
from bot.jobs import JobKind, JobRequest, Thread, TriggerKind
from tests.bot.serving import CI_EVENTS, ci_object, make_it_act

CORPUS = Path(__file__).parents[2] / "fixtures" / "octokit-webhooks-examples.json"
RULES = Rules(app_bot_login="neo[bot]", allowed_bots=frozenset({"Renovate[bot]"}))
REPO = "Codertocat/Hello-World"

Payload = dict[str, Any]


@functools.cache
def corpus() -> tuple[tuple[str, Payload], ...]:
    """Every (event, payload) of the vendored file, in its order."""
    events = json.loads(CORPUS.read_text())
    return tuple((event["name"], payload) for event in events for payload in event["examples"])


def example(event: str, action: str) -> Payload:
    """A fresh copy of a corpus payload, one with an installation when there is one."""
    found = [p for name, p in corpus() if name == event and p.get("action") == action]
    assert found, f"no {event}.{action} in the corpus"
    found.sort(key=lambda p: "installation" not in p)
    return copy.deepcopy(found[0])


def first(event: str, action: str | None = None) -> Payload:
    """A fresh copy of the first corpus payload of `event` (and `action`, if given)."""
    for name, payload in corpus():
        if name == event and (action is None or payload.get("action") == action):
            return copy.deepcopy(payload)
    raise AssertionError(f"no {event} {action} in the corpus")


def deliver(event: str, payload: Payload, delivery_id: str = "d-1") -> Delivery:
    action = payload.get("action")
    return Delivery(
        event=event,
        delivery_id=delivery_id,
        action=action if isinstance(action, str) else None,
        payload=payload,
    )


def run(event: str, payload: Payload, rules: Rules = RULES, delivery_id: str = "d-1") -> Any:
    return triage(deliver(event, payload, delivery_id), rules)


def one(result: list[JobRequest] | Ignore) -> JobRequest:
    assert isinstance(result, list), result
    assert len(result) == 1
    return result[0]


# --- payload builders: one per trigger ----------------------------------------


def issue_comment(body: str = "@neo fix the typo", *, pr: bool = False) -> Payload:
    p = example("issue_comment", "created")
    p["comment"]["body"] = body
    if pr:
        p["issue"]["pull_request"] = {
            "url": f"https://api.github.com/repos/{REPO}/pulls/1",
            "html_url": f"https://github.com/{REPO}/pull/1",
        }
    return p


def issue_opened(body: str = "Please @neo fix this.") -> Payload:
    p = example("issues", "opened")
    p["issue"]["body"] = body
    return p


def issue_edited(old: str | None = "Fix this.", new: str = "Fix this. @neo please") -> Payload:
    p = example("issues", "edited")
    p["issue"]["body"] = new
    p["changes"] = {"body": {"from": old}}
    return p


def issue_labeled(label: str = "neo") -> Payload:
    p = example("issues", "labeled")
    p["label"]["name"] = label
    return p


def issue_assigned(login: str = "neo[bot]") -> Payload:
    p = example("issues", "assigned")
    p["assignee"] = {**p["assignee"], "login": login, "type": "Bot"}
    return p


def review_comment(body: str = "@neo rename this variable") -> Payload:
    p = example("pull_request_review_comment", "created")
    p["comment"]["body"] = body
    return p


def review(body: str | None = "Looks good, but @neo add a test.") -> Payload:
    p = example("pull_request_review", "submitted")
    p["review"]["body"] = body
    return p


BUILDERS: dict[str, tuple[str, Callable[[], Payload]]] = {
    "issue_comment.created": ("issue_comment", issue_comment),
    "issue_comment.created (PR)": ("issue_comment", lambda: issue_comment(pr=True)),
    "issues.opened": ("issues", issue_opened),
    "issues.edited": ("issues", issue_edited),
    "issues.labeled": ("issues", issue_labeled),
    "issues.assigned": ("issues", issue_assigned),
    "pull_request_review_comment.created": ("pull_request_review_comment", review_comment),
    "pull_request_review.submitted": ("pull_request_review", review),
}


def as_bot(p: Payload, login: str, *, user_type: str = "Bot") -> Payload:
    """`p` sent by `login`, who also wrote its comment or review."""
    user = {**p["sender"], "login": login, "type": user_type}
    p["sender"] = user
    for key in ("comment", "review"):
        if key in p:
            p[key]["user"] = dict(user)
    return p


# --- every trigger row --------------------------------------------------------


def test_issue_comment_on_an_issue() -> None:
    p = issue_comment("@neo fix the typo in the README")
    assert run("issue_comment", p, delivery_id="72d3162e") == [
        JobRequest(
            kind=JobKind.TASK,
            thread=Thread(repository=REPO, number=1, is_pull_request=False),
            installation_id=1,
            event="issue_comment.created",
            trigger=TriggerKind("issue_comment.created"),
            trigger_id=492700400,
            author="Codertocat",
            author_association="OWNER",
            instruction="@neo fix the typo in the README",
            dedupe_key="issue_comment:492700400",
            delivery_id="72d3162e",
        )
    ]


def test_issue_comment_on_a_pull_request() -> None:
    request = one(run("issue_comment", issue_comment(pr=True)))
    assert request.thread == Thread(repository=REPO, number=1, is_pull_request=True)
    assert request.event == "issue_comment.created"


def test_issue_comment_without_installation() -> None:
    p = issue_comment()
    del p["installation"]
    assert one(run("issue_comment", p)).installation_id is None


def test_issues_opened() -> None:
    p = issue_opened("Spelling is off.\n\n@neo please fix it")
    request = one(run("issues", p))
    issue = p["issue"]
    assert request == JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=REPO, number=1),
        installation_id=None,
        event="issues.opened",
        trigger=TriggerKind("issues.opened"),
        trigger_id=issue["id"],
        author="Codertocat",
        author_association="OWNER",
        instruction=f"{issue['title']}\n\nSpelling is off.\n\n@neo please fix it",
        dedupe_key=f"issues.opened:{issue['id']}",
        delivery_id="d-1",
    )


def test_issues_edited_adding_a_mention() -> None:
    request = one(run("issues", issue_edited("Fix this.", "Fix this.\n\n@neo go")))
    assert request.event == "issues.edited"
    assert request.instruction.endswith("Fix this.\n\n@neo go")
    assert request.dedupe_key.startswith(f"issues.edited:{request.trigger_id}:")


def test_issues_edited_adding_a_second_mention() -> None:
    assert one(run("issues", issue_edited("@neo do A", "@neo do A\n\n@neo and B")))


def test_issues_edited_from_a_null_body() -> None:
    assert one(run("issues", issue_edited(None, "@neo go")))


def test_issues_labeled() -> None:
    p = issue_labeled("neo")
    request = one(run("issues", p, delivery_id="abc"))
    issue = p["issue"]
    assert request == JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=REPO, number=1),
        installation_id=None,
        event="issues.labeled",
        trigger=TriggerKind("issues.labeled"),
        trigger_id=issue["id"],
        author="Codertocat",
        author_association="OWNER",
        instruction=f"{issue['title']}\n\n{issue['body']}",
        dedupe_key=f"labeled:{issue['id']}:neo:{issue['updated_at']}",
        delivery_id="abc",
    )


def test_issues_labeled_matches_the_label_case_insensitively() -> None:
    assert one(run("issues", issue_labeled("NEO")))


def test_issues_labeled_with_a_configured_label() -> None:
    rules = Rules(app_bot_login="neo[bot]", trigger_label="ai: go")
    assert one(run("issues", issue_labeled("AI: go"), rules))
    assert run("issues", issue_labeled("neo"), rules) == Ignore(Reason.OTHER_LABEL)


def test_issues_assigned_to_the_app() -> None:
    p = issue_assigned("neo[bot]")
    request = one(run("issues", p, delivery_id="xyz"))
    assert request.event == "issues.assigned"
    assert request.kind is JobKind.TASK
    assert request.installation_id == 1
    # The human who assigned it is the author, whose access the worker checks.
    assert request.author == "Codertocat"
    assert request.instruction == f"{p['issue']['title']}\n\n{p['issue']['body']}"
    assert request.dedupe_key == f"assigned:{p['issue']['id']}:neo[bot]:{p['issue']['updated_at']}"


@pytest.mark.parametrize(
    ("event", "build"),
    [
        pytest.param("issues", issue_labeled, id="issues.labeled"),
        pytest.param("issues", issue_assigned, id="issues.assigned"),
    ],
)
def test_a_replay_under_another_delivery_id_is_the_same_event(
    event: str, build: Callable[[], Payload]
) -> None:
    """The delivery id is not signed: the same body under a fresh one is one event. The
    thread's time moves with each label or assignment: the next one is a new event."""
    p = build()
    first = one(run(event, p, delivery_id="d-1"))
    replayed = one(run(event, p, delivery_id="d-2"))
    assert replayed.dedupe_key == first.dedupe_key
    p["issue"]["updated_at"] = "2019-05-15T15:29:01Z"
    again = one(run(event, p, delivery_id="d-3"))
    assert again.dedupe_key != first.dedupe_key
    # Without the thread's time (GitHub always sends it), the body itself names it.
    del p["issue"]["updated_at"]
    assert one(run(event, p, delivery_id="d-4")).dedupe_key == (
        one(run(event, p, delivery_id="d-5")).dedupe_key
    )


def test_review_comment_created() -> None:
    p = review_comment("@neo rename `x` to `count`")
    request = one(run("pull_request_review_comment", p))
    assert request == JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=REPO, number=2, is_pull_request=True),
        installation_id=1,
        event="pull_request_review_comment.created",
        trigger=TriggerKind("pull_request_review_comment.created"),
        trigger_id=p["comment"]["id"],
        author="Codertocat",
        author_association="OWNER",
        instruction="@neo rename `x` to `count`",
        dedupe_key=f"review_comment:{p['comment']['id']}",
        delivery_id="d-1",
    )


def test_review_submitted() -> None:
    p = review("Looks good, but @neo add a test.")
    request = one(run("pull_request_review", p))
    assert request == JobRequest(
        kind=JobKind.TASK,
        thread=Thread(repository=REPO, number=2, is_pull_request=True),
        installation_id=1,
        event="pull_request_review.submitted",
        trigger=TriggerKind("pull_request_review.submitted"),
        trigger_id=p["review"]["id"],
        author="Codertocat",
        author_association="OWNER",
        instruction="Looks good, but @neo add a test.",
        dedupe_key=f"review:{p['review']['id']}",
        delivery_id="d-1",
    )


def test_review_submitted_without_a_body() -> None:
    assert run("pull_request_review", review(None)) == Ignore(Reason.NO_MENTION)


# --- mentions -----------------------------------------------------------------

MENTIONS = [
    ("@neo", True),
    ("@neo fix it", True),
    ("@NEO, fix it", True),
    ("Hey (@neo) look", True),
    ("**@neo** fix it", True),
    ("ping @neo.", True),
    ("@neo: go", True),
    ("first line\n  @neo on an indented line", True),
    ("`code` then @neo", True),
    ("unclosed `backtick @neo", True),
    ("```py``` @neo (a code span, not a fence)", True),
    ("```\ncode\n```\n@neo after the fence", True),
    ("> quoted\n\n@neo after the quote", True),
    ("@neo-bot fix it", False),
    ("@neo_x fix it", False),
    ("@neonate", False),
    ("email@neo.com", False),
    ("see @neo.com", False),
    ("@neo/maintainers", False),
    ("https://example.com/@neo", False),
    ("neo fix it", False),
    ("`@neo fix it`", False),
    ("use ``a ` @neo`` here", False),
    ("```\n@neo fix it\n```", False),
    ("```python title='x'\n@neo fix it\n```", False),
    ("~~~\n@neo fix it\n~~~", False),
    ("~~~~ sh\n@neo\n~~~~", False),
    ("- item\n\n    ```\n    @neo in a list's fence\n    ```", False),
    ("```\nunclosed fence\n@neo", False),
    ("````\n```\n@neo inside a longer fence\n````", False),
    ("> @neo fix it", False),
    ("   > @neo fix it", False),
    (">> @neo nested", False),
    ("<!-- @neo in a template comment -->", False),
    ("<!--\nmention @neo to run it\n-->\nBug report", False),
    # An unclosed comment opening a line hides the rest, as GitHub renders it;
    # one inside a paragraph is only text there (CommonMark's raw HTML rules).
    ("Bug report\n\n<!-- template notes\n\n@neo fix it", False),
    ("a lone <!-- then @neo", True),
]


@pytest.mark.parametrize(("text", "mentioned"), MENTIONS)
def test_mentions(text: str, mentioned: bool) -> None:
    assert (mentions(text, "@neo") > 0) is mentioned
    result = run("issue_comment", issue_comment(text))
    if mentioned:
        assert one(result).kind is JobKind.TASK
    else:
        assert result == Ignore(Reason.NO_MENTION)


def test_a_configured_handle() -> None:
    rules = Rules(app_bot_login="helper[bot]", handle="@helper-ai")
    assert one(run("issue_comment", issue_comment("@helper-ai go"), rules))
    assert run("issue_comment", issue_comment("@neo go"), rules) == Ignore(Reason.NO_MENTION)
    assert run("issue_comment", issue_comment("@helper go"), rules) == Ignore(Reason.NO_MENTION)


def test_the_instruction_is_the_comment_as_written() -> None:
    body = "> earlier words\n\n@neo do it\n\n```\nlog\n```"
    assert one(run("issue_comment", issue_comment(body))).instruction == body


# --- @neo stop ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "@neo stop",
        "@NEO STOP",
        "@neo, stop!",
        "@neo: stop.",
        "  @neo   stop  \n",
        "**@neo stop**",
        "> why is it still running?\n\n@neo stop",
        "@neo stop\n\n`npm test`",
        "@neo stop\n\n![a screenshot](https://example.com/shot.png)",
        "@neo stop\n\n<!-- sent from my phone -->",
    ],
)
@pytest.mark.parametrize("builder", ["issue_comment", "review_comment", "review"])
def test_stop_cancels_the_thread(body: str, builder: str) -> None:
    event, payload = {
        "issue_comment": ("issue_comment", issue_comment),
        "review_comment": ("pull_request_review_comment", review_comment),
        "review": ("pull_request_review", review),
    }[builder]
    request = one(run(event, payload(body)))
    assert request.kind is JobKind.STOP
    assert request.instruction == body


@pytest.mark.parametrize(
    "body",
    [
        "@neo stop the timer from drifting",
        "@neo please stop",
        "stop @neo",
        "@neo stopwatch",
        "@neo stop\n\nand then fix the test",
        "@neo stop\n\n<details>why</details>",
    ],
)
def test_stop_only_alone(body: str) -> None:
    assert one(run("issue_comment", issue_comment(body))).kind is JobKind.TASK


def test_stop_needs_a_real_mention() -> None:
    assert run("issue_comment", issue_comment("@neo-stop")) == Ignore(Reason.NO_MENTION)


# --- ignored ------------------------------------------------------------------


def locked(p: Payload) -> Payload:
    (p.get("issue") or p["pull_request"])["locked"] = True
    return p


def without(path: str) -> Callable[[Payload], Payload]:
    def patch(p: Payload) -> Payload:
        *parents, last = path.split(".")
        target = p
        for key in parents:
            target = target[key]
        del target[last]
        return p

    return patch


def setting(path: str, value: Any) -> Callable[[Payload], Payload]:
    def patch(p: Payload) -> Payload:
        *parents, last = path.split(".")
        target = p
        for key in parents:
            target = target[key]
        target[last] = value
        return p

    return patch


IGNORED: list[Any] = [
    # Events and actions Neo does not act on.
    ("issue_comment", lambda: {**issue_comment(), "action": "edited"}, Reason.NOT_ACTED_ON),
    ("issue_comment", lambda: {**issue_comment(), "action": "deleted"}, Reason.NOT_ACTED_ON),
    ("issues", lambda: {**issue_opened(), "action": "closed"}, Reason.NOT_ACTED_ON),
    ("pull_request", lambda: {**issue_opened(), "action": "opened"}, Reason.NOT_ACTED_ON),
    ("ping", lambda: {"zen": "@neo"}, Reason.NOT_ACTED_ON),
    ("push", lambda: first("push"), Reason.NOT_ACTED_ON),
    ("pull_request_review", lambda: first("pull_request_review", "dismissed"), Reason.NOT_ACTED_ON),
    # No mention where one is needed.
    ("issue_comment", lambda: issue_comment("Thanks!"), Reason.NO_MENTION),
    ("issue_comment", lambda: issue_comment(""), Reason.NO_MENTION),
    ("issues", lambda: issue_opened("A plain bug report"), Reason.NO_MENTION),
    ("pull_request_review_comment", lambda: review_comment("nit"), Reason.NO_MENTION),
    ("pull_request_review", lambda: review("LGTM"), Reason.NO_MENTION),
    # Bots.
    ("issue_comment", lambda: as_bot(issue_comment(), "dependabot[bot]"), Reason.BOT),
    ("issue_comment", lambda: as_bot(issue_comment(), "ci-app", user_type="Bot"), Reason.BOT),
    ("issue_comment", lambda: as_bot(issue_comment(), "sly[bot]", user_type="User"), Reason.BOT),
    ("issues", lambda: as_bot(issue_labeled(), "github-actions[bot]"), Reason.BOT),
    ("issues", lambda: as_bot(issue_opened(), "dependabot[bot]"), Reason.BOT),
    ("pull_request_review", lambda: as_bot(review(), "coderabbitai[bot]"), Reason.BOT),
    # The App itself, whatever the allow-list says (see test_the_app_is_never_allowed).
    ("issue_comment", lambda: as_bot(issue_comment(), "neo[bot]"), Reason.SELF),
    ("issue_comment", lambda: as_bot(issue_comment(), "NEO[bot]"), Reason.SELF),
    ("issues", lambda: as_bot(issue_edited(), "neo[bot]"), Reason.SELF),
    ("issues", lambda: as_bot(issue_assigned(), "neo[bot]"), Reason.SELF),
    ("pull_request_review_comment", lambda: as_bot(review_comment(), "neo[bot]"), Reason.SELF),
    (
        "issue_comment",
        lambda: setting("comment.user", {"login": "neo[bot]", "type": "Bot"})(issue_comment()),
        Reason.SELF,
    ),
    # Locked conversations.
    ("issue_comment", lambda: locked(issue_comment()), Reason.LOCKED),
    ("issue_comment", lambda: locked(issue_comment(pr=True)), Reason.LOCKED),
    ("issues", lambda: locked(issue_labeled()), Reason.LOCKED),
    ("issues", lambda: locked(issue_opened()), Reason.LOCKED),
    ("pull_request_review_comment", lambda: locked(review_comment()), Reason.LOCKED),
    ("pull_request_review", lambda: locked(review()), Reason.LOCKED),
    # Edits that add no new mention.
    ("issues", lambda: issue_edited("@neo fix it", "@neo fix it, please"), Reason.NO_NEW_MENTION),
    ("issues", lambda: issue_edited("@neo a\n\n@neo b", "@neo a"), Reason.NO_NEW_MENTION),
    ("issues", lambda: issue_edited("Fix it", "Fix `@neo` it"), Reason.NO_NEW_MENTION),
    ("issues", lambda: issue_edited("Fix it", "Fix it"), Reason.NO_NEW_MENTION),
    (
        "issues",
        lambda: setting("changes", {"title": {"from": "x"}})(issue_edited()),
        Reason.NO_NEW_MENTION,
    ),
    ("issues", lambda: without("changes")(issue_edited()), Reason.NO_NEW_MENTION),
    # Labels and assignees that are not Neo's.
    ("issues", lambda: issue_labeled("bug"), Reason.OTHER_LABEL),
    ("issues", lambda: issue_labeled("neo-later"), Reason.OTHER_LABEL),
    ("issues", lambda: issue_assigned("Codertocat"), Reason.OTHER_ASSIGNEE),
    ("issues", lambda: issue_assigned("neo"), Reason.OTHER_ASSIGNEE),
    ("issues", lambda: setting("assignee", None)(issue_assigned()), Reason.OTHER_ASSIGNEE),
    # Malformed payloads.
    ("issue_comment", lambda: without("comment.id")(issue_comment()), Reason.MALFORMED),
    (
        "issue_comment",
        lambda: setting("comment.id", "492700400")(issue_comment()),
        Reason.MALFORMED,
    ),
    ("issue_comment", lambda: setting("comment.body", 42)(issue_comment()), Reason.MALFORMED),
    ("issue_comment", lambda: without("sender")(issue_comment()), Reason.MALFORMED),
    ("issue_comment", lambda: without("repository")(issue_comment()), Reason.MALFORMED),
    ("issue_comment", lambda: setting("issue.locked", "false")(issue_comment()), Reason.MALFORMED),
    ("issue_comment", lambda: setting("issue", None)(issue_comment()), Reason.MALFORMED),
    ("issue_comment", lambda: setting("installation.id", "1")(issue_comment()), Reason.MALFORMED),
    ("issues", lambda: setting("changes.body.from", 3)(issue_edited()), Reason.MALFORMED),
    ("issues", lambda: setting("label", ["neo"])(issue_labeled()), Reason.MALFORMED),
    ("issue_comment", lambda: {"action": "created"}, Reason.MALFORMED),
]


@pytest.mark.parametrize(("event", "build", "reason"), IGNORED)
def test_ignored(event: str, build: Callable[[], Payload], reason: Reason) -> None:
    assert run(event, build()) == Ignore(reason)


def test_an_allow_listed_bot_triggers() -> None:
    # The allow-list is matched case-insensitively ("Renovate[bot]" in RULES).
    request = one(run("issue_comment", as_bot(issue_comment(), "renovate[bot]")))
    assert request.author == "renovate[bot]"


def test_the_app_is_never_allowed() -> None:
    rules = Rules(app_bot_login="neo[bot]", allowed_bots=frozenset({"neo[bot]"}))
    result = run("issue_comment", as_bot(issue_comment(), "neo[bot]"), rules)
    assert result == Ignore(Reason.SELF)


def test_a_human_labelling_a_bots_issue_triggers() -> None:
    p = issue_labeled()
    p["issue"]["user"] = {"login": "dependabot[bot]", "type": "Bot"}
    assert one(run("issues", p)).author == "Codertocat"


# (builder, path, value): a field GitHub marks optional or nullable, left out
# (None: null); triage still asks for the job, and says "NONE" for an
# association it was not given, as GitHub does.
OPTIONAL_FIELDS = [
    pytest.param("issue_comment.created", ("issue", "user"), None, id="issue-by-a-ghost"),
    pytest.param("issue_comment.created", ("comment", "user"), None, id="comment-by-a-ghost"),
    pytest.param("issue_comment.created", ("issue", "locked"), ..., id="issue-locked-absent"),
    pytest.param(
        "issue_comment.created", ("comment", "author_association"), ..., id="no-association"
    ),
    pytest.param("issues.opened", ("issue", "author_association"), None, id="null-association"),
    pytest.param("issues.opened", ("issue", "user"), ..., id="issue-user-absent"),
    pytest.param(
        "pull_request_review_comment.created",
        ("pull_request", "locked"),
        ...,
        id="pr-locked-absent",
    ),
    pytest.param(
        "pull_request_review_comment.created",
        ("comment", "user"),
        None,
        id="review-comment-by-a-ghost",
    ),
    pytest.param("pull_request_review.submitted", ("review", "user"), None, id="review-by-a-ghost"),
    pytest.param("pull_request_review.submitted", ("review", "user"), ..., id="review-user-absent"),
    pytest.param(
        "pull_request_review.submitted",
        ("review", "author_association"),
        ...,
        id="review-no-association",
    ),
]


@pytest.mark.parametrize(("name", "path", "value"), OPTIONAL_FIELDS)
def test_a_field_github_may_leave_out_still_makes_a_job(
    name: str, path: tuple[str, str], value: object
) -> None:
    event, build = BUILDERS[name]
    p = build()
    owner, field = path
    if value is ...:
        p[owner].pop(field, None)
    else:
        p[owner][field] = value

    request = one(run(event, p))

    assert request.kind is JobKind.TASK
    expected = "NONE" if field == "author_association" else "OWNER"
    assert request.author_association == expected


@pytest.mark.parametrize(
    ("handle", "app_bot_login", "trigger_label"),
    [
        ("neo", "neo[bot]", "neo"),
        ("@", "neo[bot]", "neo"),
        ("@ne o", "neo[bot]", "neo"),
        ("@neo", "", "neo"),
        ("@neo", "neo[bot]", " "),
    ],
)
def test_rules_refuse_bad_settings(handle: str, app_bot_login: str, trigger_label: str) -> None:
    with pytest.raises(ValueError, match="must"):
        Rules(handle=handle, app_bot_login=app_bot_login, trigger_label=trigger_label)


# --- dedupe keys --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_dedupe_key_is_stable_across_redelivery(name: str) -> None:
    event, build = BUILDERS[name]
    first = one(run(event, build(), delivery_id="a"))
    again = one(run(event, build(), delivery_id="a"))
    assert first.dedupe_key == again.dedupe_key
    assert first.delivery_id == again.delivery_id == "a"


@pytest.mark.parametrize(
    "name",
    [
        "issue_comment.created",
        "issue_comment.created (PR)",
        "issues.opened",
        "pull_request_review_comment.created",
        "pull_request_review.submitted",
    ],
)
def test_dedupe_key_of_a_comment_ignores_the_delivery(name: str) -> None:
    # Two deliveries carrying one comment (a duplicate, a manual redelivery
    # under a new id) make one job.
    event, build = BUILDERS[name]
    assert (
        one(run(event, build(), delivery_id="a")).dedupe_key
        == one(run(event, build(), delivery_id="b")).dedupe_key
    )


@pytest.mark.parametrize(
    ("event", "build", "object_key"),
    [
        ("issue_comment", issue_comment, "comment"),
        ("pull_request_review_comment", review_comment, "comment"),
        ("pull_request_review", review, "review"),
        ("issues", issue_opened, "issue"),
    ],
)
def test_dedupe_key_differs_across_comments(
    event: str, build: Callable[[], Payload], object_key: str
) -> None:
    first, second = build(), build()
    second[object_key]["id"] += 1
    assert one(run(event, first)).dedupe_key != one(run(event, second)).dedupe_key


def test_dedupe_key_of_an_edit_follows_the_body() -> None:
    a = one(run("issues", issue_edited("x", "@neo do A")))
    b = one(run("issues", issue_edited("x", "@neo do B")))
    assert a.dedupe_key != b.dedupe_key
    assert a.dedupe_key == one(run("issues", issue_edited("y", "@neo do A"))).dedupe_key


def test_dedupe_keys_differ_across_triggers() -> None:
    keys = {one(run(event, build())).dedupe_key for event, build in BUILDERS.values()}
    # The two issue_comment rows share one comment; every other row differs.
    assert len(keys) == len(BUILDERS) - 1


def test_requests_survive_the_queue_round_trip() -> None:
    for event, build in BUILDERS.values():
        request = one(run(event, build()))
        assert JobRequest.from_json(json.loads(json.dumps(request.to_json()))) == request


# --- the octokit corpus -------------------------------------------------------


def test_the_corpus_is_the_vendored_package() -> None:
    events = Counter(name for name, _ in corpus())
    assert len(corpus()) >= 300
    for acted in ACTED_ON:
        event, action = acted.split(".")
        assert any(n == event and p.get("action") == action for n, p in corpus()), acted
    assert events["issue_comment"] >= 5


def test_every_corpus_payload_triages_without_raising() -> None:
    outcomes: Counter[str] = Counter()
    for index, (event, payload) in enumerate(corpus()):
        result = triage(deliver(event, copy.deepcopy(payload), f"corpus-{index}"), RULES)
        assert isinstance(result, list | Ignore)
        outcomes[result.reason if isinstance(result, Ignore) else "request"] += 1
    # No corpus payload mentions @neo, carries the neo label or is assigned to
    # neo[bot]; one is a failed check run on its pull request's branch.
    assert outcomes["request"] == 1
    assert outcomes[Reason.MALFORMED] == 0, "a real payload was taken for malformed"
    assert set(outcomes) <= {
        "request",
        Reason.NOT_RED,
        Reason.NO_PULL_REQUEST,
        Reason.NOT_ACTED_ON,
        Reason.NO_MENTION,
        Reason.NO_NEW_MENTION,
        Reason.OTHER_LABEL,
        Reason.OTHER_ASSIGNEE,
    }


def acted_on_corpus() -> Iterator[tuple[str, Payload]]:
    for event, payload in corpus():
        if f"{event}.{payload.get('action')}" in ACTED_ON:
            yield event, copy.deepcopy(payload)


def trigger_object(event: str, p: Payload) -> Payload:
    if event == "pull_request_review":
        return p["review"]  # type: ignore[no-any-return]
    if event == "pull_request":
        return p["pull_request"]  # type: ignore[no-any-return]
    return p["comment"] if "comment" in p else p["issue"]  # type: ignore[no-any-return]


def test_every_event_triage_acts_on_is_a_trigger_kind_of_its_name() -> None:
    # Triage records the trigger as TriggerKind(event.action): none may be missing.
    assert {kind.value for kind in TriggerKind} >= ACTED_ON


def test_every_acted_on_corpus_payload_patched_to_act_makes_one_request() -> None:
    count = 0
    for index, (event, payload) in enumerate(acted_on_corpus()):
        p = make_it_act(event, payload)
        request = one(triage(deliver(event, p, f"corpus-{index}"), RULES))
        count += 1
        if event in CI_EVENTS:
            run = ci_object(event, p)
            assert (request.kind, request.trigger_id) == (JobKind.CI_REPAIR, run["id"])
            assert request.thread.number == run["pull_requests"][0]["number"]
            assert request.head_sha == run["head_sha"]
            assert request.author == p["sender"]["login"]
            continue
        trigger = trigger_object(event, p)
        thread = p.get("issue") or p["pull_request"]
        assert request.kind in (JobKind.TASK, JobKind.REVIEW)
        assert request.event == f"{event}.{p['action']}"
        assert request.trigger is TriggerKind(request.event)
        assert request.thread.repository == p["repository"]["full_name"]
        assert request.thread.number == thread["number"]
        assert request.trigger_id == trigger["id"]
        assert request.author == p["sender"]["login"]
        assert request.author_association == trigger["author_association"]
        assert request.installation_id == (p.get("installation") or {}).get("id")
        assert request.delivery_id == f"corpus-{index}"
    assert count >= 20


def test_our_reading_agrees_with_githubkits_models() -> None:
    """Where githubkit's typed models accept a payload, they read what triage reads."""
    from githubkit.webhooks import parse_obj
    from pydantic import ValidationError

    checked = 0
    for event, payload in acted_on_corpus():
        p = make_it_act(event, payload)
        try:
            model: Any = parse_obj(event, p)
        except ValidationError:
            continue  # githubkit is stricter than GitHub's older payloads
        request = one(triage(deliver(event, p), RULES))
        if event in CI_EVENTS:
            run = getattr(model, event)
            assert (request.trigger_id, request.head_sha) == (run.id, run.head_sha)
            assert request.thread.number == run.pull_requests[0].number
            assert request.author == model.sender.login
            checked += 1
            continue
        trigger = (
            model.review if event == "pull_request_review" else getattr(model, "comment", None)
        )
        trigger = trigger or getattr(model, "issue", None) or model.pull_request
        assert request.trigger_id == trigger.id
        if event in ("issues", "pull_request"):
            assert request.instruction == f"{trigger.title}\n\n{trigger.body or ''}".rstrip()
        else:
            assert request.instruction == trigger.body
        assert request.author == model.sender.login
        assert request.thread.repository == model.repository.full_name
        assert request.thread.number == (getattr(model, "issue", None) or model.pull_request).number
        checked += 1
    assert checked >= 10


# --- property: malformed payloads are Ignore, never an exception ---------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


USER = ("", ".login", ".type")
READ = {
    "action",
    *(f"sender{f}" for f in USER),
    "repository",
    "repository.full_name",
    "installation",
    "installation.id",
    *(f"{o}{f}" for o in ("issue", "comment", "review") for f in ("", ".id", ".body")),
    *(f"{o}.user{f}" for o in ("issue", "comment", "review") for f in USER),
    *(f"{o}.author_association" for o in ("issue", "comment", "review")),
    "issue.number",
    "issue.title",
    "issue.locked",
    "issue.pull_request",
    "pull_request",
    "pull_request.number",
    "pull_request.locked",
    "changes",
    "changes.body",
    "changes.body.from",
    "label",
    "label.name",
    *(f"assignee{f}" for f in USER),
}


@functools.cache
def triggering_payloads() -> tuple[tuple[str, Payload, tuple[tuple[Any, ...], ...]], ...]:
    """Each trigger row's payload, with the paths of the fields triage reads."""
    found = []
    for event, build in (BUILDERS[name] for name in sorted(BUILDERS)):
        payload = build()
        wanted = tuple(p for p in paths(payload) if ".".join(map(str, p)) in READ)
        found.append((event, payload, wanted))
    return tuple(found)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_payloads_never_raise(data: st.DataObject) -> None:
    event, original, candidates = data.draw(st.sampled_from(triggering_payloads()))
    payload = copy.deepcopy(original)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(candidates))
        target = payload
        try:
            for key in path[:-1]:
                target = target[key]
            if data.draw(st.booleans()):
                target[path[-1]] = data.draw(json_values)
            elif isinstance(target, dict):
                target.pop(path[-1], None)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced this path
    result = triage(deliver(event, payload), RULES)
    hypothesis.event(result.reason if isinstance(result, Ignore) else "request")
    assert isinstance(result, list | Ignore)
    if isinstance(result, list):
        assert all(isinstance(r, JobRequest) for r in result)


@settings(max_examples=200, deadline=None)
@given(
    event=st.sampled_from(sorted({a.split(".")[0] for a in ACTED_ON} | {"ping", "push"})),
    payload=st.dictionaries(st.text(max_size=10), json_values, max_size=6),
    action=st.sampled_from(["created", "opened", "edited", "labeled", "assigned", "submitted"]),
)
def test_random_payloads_never_raise(event: str, payload: Payload, action: str) -> None:
    payload["action"] = action
    assert isinstance(triage(deliver(event, payload), RULES), list | Ignore)


# Markdown and raw HTML syntax, for bodies that open and close constructs.
MARKUP = st.text(alphabet="<>!-/?[]()&#;=\"' \n\t`~*_>\\@neoprcdiv1.", max_size=120)


@settings(max_examples=300, deadline=None)
@given(body=st.text(max_size=200) | MARKUP)
def test_random_comment_bodies_never_raise(body: str) -> None:
    result = run("issue_comment", issue_comment(body))
    assert isinstance(result, list | Ignore)
    if isinstance(result, list):
        assert one(result).instruction == body
