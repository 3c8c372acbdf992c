"""`/healthz` and `/metrics` of a real `neo serve`, on each queue backend.

Both read the queue when asked: /metrics shows the jobs as the scrape finds
them, and /healthz answers 503 with one line once the database stops
answering (and 200 again once it is back).

The first two tests share one `neo serve` per backend (module scope): the
database's outage ends with the test that makes it, and only the metrics test
queues anything, so each finds the server as it expects in either order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import conninfo_to_dict

from tests.bot.intake.test_serve import jobs, mention
from tests.bot.serving import Server, headers, neo_serve, serve_env
from tests.fakes import FakeGitHub
from tests.postgres import PostgresServer, fresh_database, own_cluster


@dataclass(frozen=True)
class Backend:
    kind: str
    env: dict[str, str]
    # The queue's database: the SQLite file, or the PostgreSQL database's name.
    where: str


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("health")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, root: Path) -> Iterator[Backend]:
    if request.param == "postgres":
        with fresh_database(request.getfixturevalue("postgres_server")) as url:
            name = str(conninfo_to_dict(url)["dbname"])
            yield Backend("postgres", {"NEO_QUEUE_URL": url}, name)
        return
    yield Backend("sqlite", {}, str(root / "data" / "neo.db"))


@pytest.fixture(scope="module")
def server(backend: Backend, root: Path) -> Iterator[Server]:
    data = root / "data" if backend.kind == "sqlite" else root / "data-postgres"
    with (
        FakeGitHub(slug="neo") as github,
        neo_serve(
            {**serve_env(github, data), **backend.env}, root / f"serve-{backend.kind}.log"
        ) as running,
    ):
        yield running


def samples(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """/metrics, parsed by Prometheus' own parser: (name, labels) to value."""
    answer = httpx.get(f"{server.url}/metrics")
    assert answer.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def queue_a_mention(server: Server, n: int) -> None:
    payload = mention()
    payload["comment"]["id"] = 7000 + n
    payload["issue"]["number"] = 100 + n
    body = json.dumps(payload).encode()
    answer = httpx.post(
        f"{server.url}/api/github/webhooks",
        content=body,
        headers=headers("issue_comment", body, delivery=f"d-health-{n}"),
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["decision"] == "queued"


def test_metrics_show_the_queue_as_each_scrape_finds_it(server: Server) -> None:
    before = samples(server)
    assert before[("neo_queue_up", ())] == 1.0
    assert before[("neo_queue_depth", ())] == 0.0
    assert before[("neo_queue_oldest_queued_age_seconds", ())] == 0.0

    for n in range(3):
        queue_a_mention(server, n)
    after = samples(server)

    assert after[("neo_queue_up", ())] == 1.0
    assert after[("neo_queue_depth", ())] == 3.0
    assert after[("neo_queue_running", ())] == 0.0
    assert after[("neo_queue_jobs", (("state", "queued"),))] == 3.0
    assert after[("neo_queue_jobs", (("state", "succeeded"),))] == 0.0
    assert after[("neo_queue_oldest_queued_age_seconds", ())] >= 0.0
    assert (
        after[
            ("neo_webhook_deliveries_total", (("decision", "queued"), ("event", "issue_comment")))
        ]
        == 3.0
    )
    assert httpx.get(f"{server.url}/healthz").json() == {"ok": True}


def test_healthz_is_503_with_one_line_while_the_database_is_gone(
    server: Server, backend: Backend, request: pytest.FixtureRequest
) -> None:
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    with database_down(backend, request):
        down = httpx.get(f"{server.url}/healthz", timeout=30)
        scraped = samples(server)
    assert down.status_code == 503
    answer = down.json()
    assert answer["ok"] is False
    assert answer["error"].startswith("the queue is unreachable")
    assert len(answer["error"].splitlines()) == 1
    # Anyone who reaches the webhook may ask: no path, host or database error.
    for private in ("/", "127.0.0.1", "neo.db", backend.where):
        assert private not in answer["error"]
    # The operator's log has the queue's own line.
    assert '"event": "queue_unreachable"' in server.log.read_text()
    assert scraped[("neo_queue_up", ())] == 0.0
    assert ("neo_queue_depth", ()) not in scraped
    # Healthy again once the database is back (the pool reconnects on its own).
    assert httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200


class database_down:
    """The queue's database gone while inside: connections refused (PostgreSQL), or
    the file moved away (SQLite: a wiped data directory, a volume remounted)."""

    def __init__(self, backend: Backend, request: pytest.FixtureRequest) -> None:
        self.backend = backend
        self.request = request

    def __enter__(self) -> None:
        if self.backend.kind == "postgres":
            self._allow(False)
            return
        path = Path(self.backend.where)
        path.rename(path.with_name("moved.db"))

    def __exit__(self, *exc_info: object) -> None:
        if self.backend.kind == "postgres":
            self._allow(True)
            return
        path = Path(self.backend.where)
        path.with_name("moved.db").rename(path)

    def _allow(self, allowed: bool) -> None:
        postgres: PostgresServer = self.request.getfixturevalue("postgres_server")
        name = self.backend.where
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            conn.execute(
                f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}'.encode()
            )
            if not allowed:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )


def test_deliveries_while_postgresql_is_stopped_are_503_and_one_log_line_each(
    tmp_path: Path,
) -> None:
    """Nothing is acknowledged that is not queued (rule 4): GitHub sees a 503, the log one
    line per delivery (not a traceback), and each delivered again once the database is
    back is queued."""
    log = tmp_path / "serve.log"
    bodies = {}
    for n in range(3):
        payload = mention()
        payload["comment"]["id"] = 8000 + n
        payload["issue"]["number"] = 200 + n
        bodies[f"d-outage-{n}"] = json.dumps(payload).encode()

    def deliver(delivery: str) -> httpx.Response:
        body = bodies[delivery]
        return httpx.post(
            f"{running.url}/api/github/webhooks",
            content=body,
            headers=headers("issue_comment", body, delivery=delivery),
            timeout=30,
        )

    with own_cluster() as postgres, FakeGitHub(slug="neo") as github:
        env = {**serve_env(github, tmp_path / "data"), "NEO_QUEUE_URL": postgres.database("neo")}
        with neo_serve(env, log) as running:
            postgres.stop()
            try:
                before = log.stat().st_size
                during = {delivery: deliver(delivery) for delivery in bodies}
                outage = log.read_bytes()[before:].decode().splitlines()
            finally:
                postgres.start()
            # Delivered again (as GitHub's "Redeliver" does) once the database is back;
            # the pool may first find its old connection dead: another 503.
            deadline = time.monotonic() + 60
            again = {}
            for delivery in bodies:
                while (answer := deliver(delivery)).status_code == 503:
                    assert time.monotonic() < deadline, answer.text
                    time.sleep(0.5)
                again[delivery] = answer
            listed = jobs(running)

    for answer in during.values():
        assert answer.status_code == 503, answer.text
        said = answer.json()
        assert said["decision"] == "queue_unavailable"
        assert "127.0.0.1" not in said["error"]
    # While the database was away: one JSON line per delivery, and nothing else.
    assert [json.loads(line)["delivery"] for line in outage] == list(bodies), outage
    text = log.read_text()
    assert "Traceback" not in text
    assert "Exception in ASGI application" not in text
    for delivery in bodies:
        lines = [json.loads(line) for line in text.splitlines() if f'"{delivery}"' in line]
        decisions = [(line["decision"], line["status"]) for line in lines]
        assert decisions[0] == ("queue_unavailable", 503), lines
        assert set(decisions[:-1]) == {("queue_unavailable", 503)}, lines
        assert decisions[-1] == ("queued", 202), lines
        assert lines[0]["error"]  # the queue's own words, for the operator
        assert (lines[0]["action"], lines[0]["repository"]) == ("created", "Codertocat/Hello-World")
    assert {answer.json()["decision"] for answer in again.values()} == {"queued"}
    assert sorted(job["request"]["delivery_id"] for job in listed) == sorted(bodies)
