"""The webhook endpoint under random input, in process, and its per-delivery log line.

The app is built with `create_app` around a real SqliteQueue in a temp dir
and served in process: its ASGI lifespan runs (so the intake opens and
closes as under uvicorn) and httpx's ASGI transport carries the requests,
re-raising anything the app raises, so an unhandled error fails the test
even before a 5xx could be seen. (Starlette's TestClient does the same from
a portal thread, at several times the cost per request: too slow for
thousands of examples.)

Hypothesis throws random methods, paths, headers and bodies at it: bytes,
JSON-ish and form-ish text, large bodies, and real corpus payloads mutated
and then signed correctly, so parsing, triage and the queue are exercised,
not only the signature check.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.intake.server import WEBHOOK_PATH, Intake, create_app
from bot.intake.triggers import ACTED_ON, Rules
from bot.intake.webhooks import MAX_BODY
from bot.jobs import JobRequest
from bot.queue import EnqueueResult, JobQueue, SqliteQueue, open_queue, sqlite_url
from tests.bot.serving import corpus

SECRET = b"fuzz-secret"
RULES = Rules(app_bot_login="neo[bot]")
# What the endpoint may answer at all; never a 5xx. 307 is starlette's
# redirect of a path with a trailing slash.
ANSWERS = {200, 202, 307, 400, 401, 404, 405, 413}
DECISIONS = {"ping", "ignored", "queued", "duplicate"}

Payload = dict[str, Any]


def signature(body: bytes, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


class StalledQueue(SqliteQueue):
    """A queue whose database stopped answering: pings and commits never return."""

    async def ping(self) -> None:
        await asyncio.Event().wait()

    async def enqueue(self, delivery_id: str, requests: Sequence[JobRequest]) -> EnqueueResult:
        await asyncio.Event().wait()
        raise AssertionError("never answers")


def intake_at(path: Path, *, seconds: float = 60, stalled: bool = False) -> Any:
    """An `open_intake` for create_app: a real SQLite queue at `path`.

    What a request holds is fuzzed here, not how soon a loaded machine
    answers: the queue's deadlines, `seconds`, are ample unless a test is
    about them.
    """

    async def open_intake() -> AsyncIterator[Intake]:
        queue: JobQueue = StalledQueue(path) if stalled else open_queue(sqlite_url(path))
        try:
            yield Intake(SECRET, RULES, queue, queue_seconds=seconds, enqueue_seconds=seconds)
        finally:
            await queue.close()

    return open_intake


@dataclass
class Served:
    """The app, started, and a client to it; call from synchronous code."""

    runner: asyncio.Runner
    client: httpx.AsyncClient
    db: Path
    queued: set[str] = field(default_factory=set)  # delivery ids answered "queued"

    def request(
        self,
        method: str,
        path: str,
        *,
        content: bytes = b"",
        headers: Mapping[str, bytes | str] | None = None,
    ) -> httpx.Response:
        raw = [
            (name.encode(), value if isinstance(value, bytes) else value.encode())
            for name, value in (headers or {}).items()
        ]
        return self.runner.run(self.client.request(method, path, content=content, headers=raw))


@contextmanager
def serve_in_process(db: Path, **intake: Any) -> Iterator[Served]:
    """The app with its lifespan run, as uvicorn runs it, on one event loop."""
    app = create_app(intake_at(db, **intake))
    with asyncio.Runner() as runner:
        # What a server does with the ASGI lifespan events: open the intake
        # before the first request, close it after the last.
        lifespan = app.router.lifespan_context(app)
        runner.run(lifespan.__aenter__())
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://neo.test")
        try:
            yield Served(runner, client, db)
        finally:
            runner.run(client.aclose())
            runner.run(lifespan.__aexit__(None, None, None))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_in_process(tmp_path_factory.mktemp("fuzz") / "neo.db") as running:
        yield running


# --- strategies ------------------------------------------------------------------

CORPUS = corpus()
EVENTS = sorted({name for name, _ in CORPUS} | {"ping"})
ACTING = [
    (name, payload) for name, payload in CORPUS if f"{name}.{payload.get('action')}" in ACTED_ON
]
MENTIONS = [
    "@neo fix it",
    "@neo stop",
    "@NEO, stop!",
    "`@neo` in code",
    "> @neo quoted",
    "```\n@neo\n```",
    "@neo-bot no",
    "mail@neo.com",
    "<!-- @neo -->",
    "@neo\x00\ud800",
]
# Bodies that once broke JSON parsers somewhere.
NASTY = [
    b"",
    b"null",
    b"[]",
    b'"string"',
    b"{}",
    b'{"action": null}',
    b'{"action": 1}',
    b"NaN",
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"\xff\xfe{}",
    b'{"a": "\\ud800"}',
    b"\xef\xbb\xbf{}",
    b"payload=",
    b"payload=%7B%7D&payload=%7B%7D",
    b"payload=%ff",
    b"&" * 1000,
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(MENTIONS),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def make_it_act(event: str, p: Payload, text: str) -> None:
    """Patch an acted-on payload so that Neo acts on it, with `text` as the mention."""
    action = p["action"]
    if event in ("issue_comment", "pull_request_review_comment"):
        p["comment"]["body"] = text
    elif event == "pull_request_review":
        p["review"]["body"] = text
    elif event == "pull_request" and action == "labeled":
        p["label"]["name"] = "neo-review"
    elif event == "pull_request" and action == "review_requested":
        p["requested_reviewer"] = {**p.get("requested_reviewer", {}), "login": "neo[bot]"}
    elif action == "opened":
        p["issue"]["body"] = text
    elif action == "edited":
        p["changes"] = {"body": {"from": p["issue"]["body"]}}
        p["issue"]["body"] = text
    elif action == "labeled":
        p["label"]["name"] = "neo"
    elif action == "assigned":
        p["assignee"]["login"] = "neo[bot]"


# The strategies the composites below draw from, built once: a strategy built
# inside a draw is built and validated again for every example (st.text's
# alphabet alone is a few milliseconds), most of the fuzzing's cost otherwise.
mostly = st.sampled_from([True, True, True, False])
rarely = st.sampled_from([False] * 9 + [True])
booleans = st.booleans()
pools = {
    acting: (pool, st.integers(0, len(pool) - 1))
    for acting, pool in ((True, ACTING), (False, CORPUS))
}
mention_texts = st.just("@neo fix it") | st.sampled_from(MENTIONS) | st.text(max_size=50)
trigger_ids = st.integers(1, 2**53)
mutation_counts = st.integers(0, 3)
events = st.sampled_from(EVENTS)
# A corpus payload as JSON: `json.loads` copies one several times faster than
# `copy.deepcopy`, to the same value.
CORPUS_JSON = {id(payload): json.dumps(payload) for _, payload in CORPUS}


@st.composite
def mutated_payload(draw: st.DrawFn) -> tuple[str, Payload]:
    """A corpus payload, mostly one Neo acts on patched to act, with a few fields
    changed or removed."""
    # (sampled_from, not integers: hypothesis favours the ends of a range.)
    acting = draw(mostly)
    pool, indices = pools[acting]
    event, original = pool[draw(indices)]
    payload = json.loads(CORPUS_JSON[id(original)])
    if acting:
        text = draw(mention_texts)
        make_it_act(event, payload, text)
        for key in ("comment", "review", "issue"):
            if key in payload and draw(booleans):
                # A new trigger: a new job rather than an existing one's id.
                payload[key]["id"] = draw(trigger_ids)
    for _ in range(draw(mutation_counts)):
        # Walk down to a random dict and change or drop one of its keys. The
        # event and action are changed below, and rarely: sampled_from favours
        # the first key, which would be "action".
        node: Any = payload
        while True:
            keys = sorted(set(node) - {"action"}) if isinstance(node, dict) else []
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, dict) and child and draw(booleans):
                node = child
                continue
            if draw(booleans):
                del node[key]
            else:
                node[key] = draw(json_values)
            break
    if draw(rarely):
        event = draw(events)
    if draw(rarely):
        payload["action"] = draw(json_values)
    return event, payload


def form(body: bytes) -> bytes:
    return b"payload=" + quote(body).encode()


def repeated(chunk: bytes, times: int) -> bytes:
    return chunk * times


bodies = st.one_of(
    st.binary(max_size=512),
    st.sampled_from(NASTY),
    json_values.map(lambda value: json.dumps(value).encode()),
    json_values.map(lambda value: form(json.dumps(value).encode())),
    st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=5).map(
        lambda fields: "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items()).encode()
    ),
    # Large, up to 1 MiB: under the limit, but sent in many chunks.
    st.builds(repeated, st.binary(min_size=1, max_size=64), st.integers(1_000, 16_000)),
)

# Header values as bytes: starlette reads them as latin-1, whatever they hold.
header_values = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=80).map(
        lambda text: text.encode("latin-1")
    ),
    st.sampled_from([b"", b" ", b"\t", b"x" * 300]),
)
SERIAL = itertools.count()
# Redeliveries: the same delivery id again, padded or not.
DUPLICATES = [b"dup-1", b"dup-2", b" dup-1 "]
delivery_ids = st.one_of(
    st.uuids().map(lambda u: str(u).encode()),
    st.sampled_from(DUPLICATES),
    header_values,
)
maybe_delivery_ids = st.none() | delivery_ids
content_types = st.sampled_from(
    [
        None,
        b"application/json",
        b"Application/JSON; charset=utf-8",
        b"application/x-www-form-urlencoded",
        b"text/plain",
        b"",
        b"multipart/form-data; boundary=x",
    ]
)
content_lengths = st.sampled_from([None, None, None, b"0", b"1", str(MAX_BODY + 1).encode(), b"x"])
SIGNATURE_KINDS = ("correct", "missing", "other-secret", "sha1", "garbage", "zeros", "upper")
signature_kinds = st.sampled_from(SIGNATURE_KINDS)
shapes = st.sampled_from(["payload", "payload-form", "random"])
random_events = st.none() | st.sampled_from(EVENTS).map(str.encode) | header_values
# A fresh id mostly, a redelivery sometimes: None stands for the fresh one.
redeliveries = st.sampled_from([None, None, None, *DUPLICATES])
correct_kinds = st.sampled_from(["correct", "upper"])
methods = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"])
paths = st.sampled_from(
    [WEBHOOK_PATH, WEBHOOK_PATH + "/", "/healthz", "/metrics", "/", "/api/github"]
) | st.text(max_size=40).map(lambda text: "/" + quote(text))
maybe_events = st.none() | st.sampled_from(EVENTS).map(str.encode)


@dataclass(frozen=True)
class Attempt:
    method: str
    path: str
    body: bytes
    headers: dict[str, bytes]
    signed: bool  # X-Hub-Signature-256 is the body's true signature


def attempt_headers(
    draw: st.DrawFn, body: bytes, event: bytes | None, kind: str
) -> dict[str, bytes]:
    headers: dict[str, bytes] = {}
    if event is not None:
        headers["x-github-event"] = event
    delivery = draw(maybe_delivery_ids)
    if delivery is not None:
        headers["x-github-delivery"] = delivery
    content_type = draw(content_types)
    if content_type is not None:
        headers["content-type"] = content_type
    length = draw(content_lengths)
    if length is not None:
        headers["content-length"] = length
    given = {
        "correct": signature(body),
        "other-secret": signature(body, b"another-secret"),
        "sha1": "sha1=" + hashlib.sha1(body).hexdigest(),  # GitHub's legacy header
        "zeros": "sha256=" + "0" * 64,
        # Hex digits are case-insensitive: the same digest, upper case.
        "upper": signature(body).upper().replace("SHA256=", "sha256="),
    }
    if kind == "garbage":
        headers["x-hub-signature-256"] = draw(header_values)
    elif kind != "missing":
        headers["x-hub-signature-256"] = given[kind].encode()
    return headers


@st.composite
def webhook_attempts(draw: st.DrawFn) -> Attempt:
    """A POST to the webhook path: a body, some headers, a signature of some kind.

    Half are corpus payloads, mutated, under well-formed, correctly signed
    headers: those get past the signature and parsing into triage and the
    queue. The rest are random bodies, or payloads under random headers.
    """
    shape = draw(shapes)
    if shape == "random":
        body = draw(bodies)
        event: bytes | None = draw(random_events)
    else:
        name, payload = draw(mutated_payload())
        body = json.dumps(payload).encode()
        if shape == "payload-form":
            body = form(body)
        event = name.encode()
    if shape != "random" and draw(mostly):
        # A fresh id mostly (hypothesis would draw the same few uuids again
        # and again), a redelivery sometimes.
        fresh = f"fuzz-{next(SERIAL)}".encode()
        delivery = draw(redeliveries) or fresh
        kind = draw(correct_kinds)
        headers = {
            "x-github-event": event or b"",
            "x-github-delivery": delivery,
            "x-hub-signature-256": signature(body).encode(),
            "content-type": b"application/x-www-form-urlencoded"
            if shape == "payload-form"
            else b"application/json",
        }
    else:
        kind = draw(signature_kinds)
        headers = attempt_headers(draw, body, event, kind)
    if kind == "upper":
        headers["x-hub-signature-256"] = (
            signature(body).upper().replace("SHA256=", "sha256=").encode()
        )
    return Attempt("POST", WEBHOOK_PATH, body, headers, kind in ("correct", "upper"))


@st.composite
def other_attempts(draw: st.DrawFn) -> Attempt:
    """Any method to any path, the webhook's included, with random headers."""
    method = draw(methods)
    path = draw(paths)
    body = draw(bodies)
    kind = draw(signature_kinds)
    event = draw(maybe_events)
    headers = attempt_headers(draw, body, event, kind)
    return Attempt(method, path, body, headers, kind in ("correct", "upper"))


def check(served: Served, attempt: Attempt) -> None:
    answer = served.request(
        attempt.method, attempt.path, content=attempt.body, headers=attempt.headers
    )
    status = answer.status_code

    assert status < 500, answer.text
    assert status in ANSWERS, (status, answer.text)
    is_webhook = attempt.method == "POST" and attempt.path == WEBHOOK_PATH
    if is_webhook and not attempt.signed:
        # Nothing unsigned is read past the signature, let alone accepted.
        assert status in (401, 413), (status, answer.text)
    if is_webhook and attempt.signed:
        assert status != 401, answer.text
    # Shown by --hypothesis-show-statistics: how far the examples got.
    event(f"{status} {answer.json().get('decision', '') if is_webhook else ''}".strip())
    if is_webhook and status < 300:
        decision = answer.json()["decision"]
        assert decision in DECISIONS
        if decision == "queued":
            served.queued.add(attempt.headers["x-github-delivery"].decode("latin-1").strip())
    if status == 401:
        assert signature(attempt.body)[7:] not in answer.text
    assert served.request("GET", "/healthz").json() == {"ok": True}


FUZZ = settings(
    max_examples=1_000,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


@FUZZ
@given(attempt=webhook_attempts())
def test_webhook_deliveries_never_get_a_5xx(served: Served, attempt: Attempt) -> None:
    check(served, attempt)


@FUZZ
@given(attempt=other_attempts())
def test_any_request_never_gets_a_5xx(served: Served, attempt: Attempt) -> None:
    check(served, attempt)


def test_the_queue_holds_only_what_was_answered_queued(served: Served) -> None:
    """Runs after the fuzzing (file order): every job's delivery was answered queued."""

    async def jobs() -> list[str]:
        queue = open_queue(sqlite_url(served.db), create=False)
        try:
            return [job.request.delivery_id for job in await queue.list(limit=1_000_000)]
        finally:
            await queue.close()

    delivered = asyncio.run(jobs())
    assert set(delivered) <= served.queued
    assert len(delivered) == len(set(delivered))


# --- one JSON log line per delivery ------------------------------------------------


def test_one_json_log_line_per_delivery(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="neo.server")
    event, mention = next((name, copy.deepcopy(p)) for name, p in ACTING if name == "issue_comment")
    mention["comment"]["body"] = "@neo fix the flaky date test"
    body = json.dumps(mention).encode()
    star = json.dumps({"action": "created", "repository": mention["repository"]}).encode()
    ping = json.dumps({"zen": "Design for failure.", "hook_id": 1}).encode()
    sent = [
        ("d-queued", event, body, signature(body)),
        ("d-queued", event, body, signature(body)),
        ("d-star", "star", star, signature(star)),
        ("d-ping", "ping", ping, signature(ping)),
        ("d-forged", event, body, "sha256=" + "0" * 64),
    ]

    with serve_in_process(tmp_path / "neo.db") as served:
        caplog.clear()
        for delivery, name, content, signed in sent:
            served.request(
                "POST",
                WEBHOOK_PATH,
                content=content,
                headers={
                    "content-type": "application/json",
                    "x-github-event": name,
                    "x-github-delivery": delivery,
                    "x-hub-signature-256": signed,
                },
            )
        served.request("GET", "/healthz")  # not a delivery: no line

    lines = [
        json.loads(record.getMessage())
        for record in caplog.records
        if record.name == "neo.server" and record.levelno == logging.INFO
    ]
    assert len(lines) == len(sent)
    for line in lines:
        assert {"delivery", "event", "action", "repository", "decision", "latency_ms"} <= set(line)
        assert isinstance(line["latency_ms"], float | int)
        assert line["latency_ms"] >= 0
    repository = mention["repository"]["full_name"]
    assert [
        (line["delivery"], line["event"], line["action"], line["repository"], line["decision"])
        for line in lines
    ] == [
        ("d-queued", "issue_comment", "created", repository, "queued"),
        ("d-queued", "issue_comment", "created", repository, "duplicate"),
        ("d-star", "star", "created", repository, "ignored"),
        ("d-ping", "ping", None, None, "ping"),
        # A forged delivery is not parsed: its action and repository are unknown.
        ("d-forged", "issue_comment", None, None, "bad_signature"),
    ]
    assert lines[2]["reason"] == "not an event neo acts on"
    # What users wrote stays out of the logs.
    assert "flaky date test" not in caplog.text


def test_a_queue_that_stops_answering_is_reported_within_its_deadlines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="neo.server")
    _, mention = next((name, copy.deepcopy(p)) for name, p in ACTING if name == "issue_comment")
    mention["comment"]["body"] = "@neo fix the flaky date test"
    body = json.dumps(mention).encode()
    with serve_in_process(tmp_path / "neo.db", seconds=0.2, stalled=True) as served:
        health = served.request("GET", "/healthz")
        delivered = served.request(
            "POST",
            WEBHOOK_PATH,
            content=body,
            headers={
                "content-type": "application/json",
                "x-github-event": "issue_comment",
                "x-github-delivery": "d-stalled",
                "x-hub-signature-256": signature(body),
            },
        )
        metrics = served.request("GET", "/metrics")
    assert (health.status_code, health.json()) == (
        503,
        {"ok": False, "error": "the queue is unreachable: no answer within 0.2 s"},
    )
    # Not queued, so not acknowledged: GitHub may deliver it again.
    assert delivered.status_code == 503
    assert delivered.json()["decision"] == "queue_unavailable"
    assert delivered.json()["error"] == "the queue is unavailable; deliver this again later"
    said = [
        json.loads(record.getMessage())
        for record in caplog.records
        if record.levelno == logging.INFO
    ]
    assert [(line["decision"], line["error"]) for line in said] == [
        ("queue_unavailable", "no answer within 0.2 s")
    ]
    # The service's own metrics are still served, without the queue's.
    assert metrics.status_code == 200
    assert "neo_jobs" not in metrics.text
