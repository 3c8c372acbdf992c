"""`neo serve` as a real process: a signed mention queues exactly one job.

The deliveries it refuses or ignores go to one `neo serve` of the module
(`quiet`): none of them may queue a job, so each test sees the queue empty
before and after it, whatever ran before it on that server.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.cli.main import main
from bot.queue.url import sqlite_url
from tests.bot.serving import (
    NEO,
    SECRET,
    Server,
    corpus,
    headers,
    neo_serve,
    neo_serve_alone,
    serve_env,
    sign,
)
from tests.fakes import FakeGitHub


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(slug="neo") as fake:
        yield fake


@pytest.fixture
def server(github: FakeGitHub, tmp_path: Path) -> Iterator[Server]:
    with neo_serve(serve_env(github, tmp_path / "data"), tmp_path / "serve.log") as running:
        yield running


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `neo serve` for the module's deliveries that must queue nothing."""
    with neo_serve_alone(tmp_path_factory.mktemp("quiet")) as running:
        yield running


def mention() -> dict[str, Any]:
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created" and "installation" in p
    )
    payload["comment"]["body"] = "@neo please fix the flaky date test"
    payload["comment"]["user"]["type"] = "User"
    payload["sender"]["type"] = "User"
    payload["issue"]["locked"] = False
    return payload


def jobs(server: Server) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(NEO), "jobs", "list", "--format", "json"],
        env=dict(server.env),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed = json.loads(done.stdout)
    assert isinstance(listed, list)
    return listed


def listed_in_process(server: Server, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """`neo jobs list --format json` on `server`'s queue, run in this process.

    The console script is `jobs` above; this is the same `main`, without a
    process start per check.
    """
    url = sqlite_url(Path(server.env["NEO_DATA_DIR"]).absolute() / "neo.db")
    capsys.readouterr()
    assert main(["jobs", "list", "--format", "json", "--queue-url", url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert isinstance(listed, list)
    return listed


def test_a_signed_mention_queues_exactly_one_job(server: Server) -> None:
    body = json.dumps(mention()).encode()
    delivery = headers("issue_comment", body, delivery="d-accept-1")

    first = httpx.post(f"{server.url}/api/github/webhooks", content=body, headers=delivery)
    again = httpx.post(f"{server.url}/api/github/webhooks", content=body, headers=delivery)

    assert first.status_code == 202, first.text
    assert first.json()["decision"] == "queued"
    assert again.status_code == 202
    assert again.json()["decision"] == "duplicate"
    listed = jobs(server)
    assert len(listed) == 1
    job = listed[0]
    assert job["state"] == "queued"
    assert job["request"]["instruction"] == "@neo please fix the flaky date test"
    assert job["request"]["delivery_id"] == "d-accept-1"


def test_ping_health_and_metrics(quiet: Server) -> None:
    server = quiet
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()

    ping = httpx.post(
        f"{server.url}/api/github/webhooks", content=body, headers=headers("ping", body)
    )
    metrics = httpx.get(f"{server.url}/metrics")

    assert ping.status_code == 200
    assert httpx.get(f"{server.url}/healthz").json() == {"ok": True}
    # The only ping the module's server is sent.
    assert 'neo_webhook_deliveries_total{decision="ping",event="ping"} 1.0' in metrics.text
    assert 'neo_queue_jobs{state="queued"} 0.0' in metrics.text
    assert "neo_webhook_ack_seconds_bucket" in metrics.text


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"x-hub-signature-256": None}, 401),
        ({"x-hub-signature-256": "sha1=" + "0" * 40}, 401),
        ({"x-hub-signature-256": "sha256=" + "0" * 64}, 401),
        ({"x-github-event": None}, 400),
        ({"x-github-delivery": None}, 400),
    ],
)
def test_bad_headers_are_refused_and_nothing_is_echoed(
    quiet: Server, capsys: pytest.CaptureFixture[str], change: dict[str, str | None], status: int
) -> None:
    server = quiet
    body = json.dumps(mention()).encode()
    sent = {**headers("issue_comment", body)}
    for name, value in change.items():
        if value is None:
            sent.pop(name)
        else:
            sent[name] = value

    answer = httpx.post(f"{server.url}/api/github/webhooks", content=body, headers=sent)

    assert answer.status_code == status
    assert "flaky date test" not in answer.text
    assert (change.get("x-hub-signature-256") or "sha256=x")[7:20] not in answer.text
    assert listed_in_process(server, capsys) == []


def test_malformed_bodies_and_unknown_events(
    quiet: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    server = quiet
    bad_json = b"{not json"
    form = b"payload=" + b"%7Bbroken"
    unknown = json.dumps({"action": "created"}).encode()
    url = f"{server.url}/api/github/webhooks"

    assert httpx.post(url, content=bad_json, headers=headers("issues", bad_json)).status_code == 400
    form_headers = {
        **headers("issues", form),
        "content-type": "application/x-www-form-urlencoded",
    }
    assert httpx.post(url, content=form, headers=form_headers).status_code == 400
    answer = httpx.post(url, content=unknown, headers=headers("sponsorship", unknown))
    assert answer.status_code == 202
    assert answer.json()["decision"] == "ignored"
    assert listed_in_process(server, capsys) == []


def test_an_oversized_body_is_refused_without_reading_it(
    quiet: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    server = quiet
    size = 26 * 1024 * 1024

    def chunks() -> Iterator[bytes]:
        piece = b"x" * (1024 * 1024)
        for _ in range(size // len(piece)):
            yield piece

    sent = {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "d-big",
        "x-hub-signature-256": "sha256=" + "0" * 64,
    }
    try:
        answer = httpx.post(
            f"{server.url}/api/github/webhooks", content=chunks(), headers=sent, timeout=30
        )
        status = answer.status_code
    except httpx.TransportError:
        # The server may close the connection while the client still sends.
        status = 413
    assert status == 413
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert listed_in_process(server, capsys) == []


def test_a_form_encoded_delivery_is_accepted(server: Server) -> None:
    from urllib.parse import quote

    body = b"payload=" + quote(json.dumps(mention())).encode()
    sent = {
        **headers("issue_comment", body, delivery="d-form"),
        "content-type": "application/x-www-form-urlencoded",
    }

    answer = httpx.post(f"{server.url}/api/github/webhooks", content=body, headers=sent)

    assert answer.status_code == 202, answer.text
    assert answer.json()["decision"] == "queued"


def test_start_up_fails_with_one_line_on_a_bad_setting(github: FakeGitHub, tmp_path: Path) -> None:
    env = serve_env(github, tmp_path / "data")
    env["NEO_GITHUB_APP_ID"] = "not-a-number"

    done = subprocess.run(
        [str(NEO), "serve", "--port", "1"], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "neo: error: NEO_GITHUB_APP_ID: Input should be a valid integer, "
        "unable to parse string as an integer"
    ]


def test_start_up_fails_with_one_line_on_wrong_app_credentials(
    github: FakeGitHub, tmp_path: Path
) -> None:
    env = serve_env(github, tmp_path / "data")
    env["NEO_GITHUB_APP_ID"] = str(github.app_id + 1)

    done = subprocess.run(
        [str(NEO), "serve", "--port", "1"], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("neo: error: github 401")
    assert "NEO_GITHUB_APP_ID" in lines[0]
    assert "PRIVATE KEY" not in done.stderr
    assert SECRET not in done.stderr
    _ = sign  # the helper module's signing is used by the other tests
