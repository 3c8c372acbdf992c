"""Two real `neo serve` replicas on one PostgreSQL queue: a redelivery is queued once."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from bot.cli.main import main
from bot.queue.pg_schema import SCHEMA_VERSION
from tests.bot.intake.test_serve import mention
from tests.bot.serving import NEO, headers, neo_serve, serve_env
from tests.fakes import FakeGitHub


def test_replicas_sharing_a_database_queue_each_delivery_once(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeGitHub(slug="neo") as github:
        env = {**serve_env(github, tmp_path / "data"), "NEO_QUEUE_URL": postgres_url}
        with (
            neo_serve({**env, "NEO_DATA_DIR": str(tmp_path / "a")}, tmp_path / "a.log") as one,
            neo_serve({**env, "NEO_DATA_DIR": str(tmp_path / "b")}, tmp_path / "b.log") as two,
        ):
            deliveries = []
            for n in range(10):
                payload = mention()
                payload["comment"]["id"] = 5000 + n
                body = json.dumps(payload).encode()
                deliveries.append((body, headers("issue_comment", body, delivery=f"d-{n}")))

            def post(replica: str, n: int) -> str:
                body, sent = deliveries[n]
                answer = httpx.post(f"{replica}/api/github/webhooks", content=body, headers=sent)
                assert answer.status_code == 202, answer.text
                return str(answer.json()["decision"])

            # GitHub redelivers each delivery to the other replica, at the same moment.
            with ThreadPoolExecutor(8) as pool:
                decisions = list(
                    pool.map(post, [one.url, two.url] * 10, [n for n in range(10) for _ in "ab"])
                )
            # `neo jobs list`'s main, in this process: the queue both replicas wrote.
            capsys.readouterr()
            assert main(["jobs", "list", "--format", "json", "--queue-url", postgres_url]) == 0
            listed = json.loads(capsys.readouterr().out)
    assert sorted(decisions) == ["duplicate"] * 10 + ["queued"] * 10
    for n in range(10):
        assert sorted(decisions[2 * n : 2 * n + 2]) == ["duplicate", "queued"], n
    assert sorted(job["request"]["delivery_id"] for job in listed) == [f"d-{n}" for n in range(10)]


def test_a_replica_on_a_database_that_is_behind_stops_with_one_line(
    tmp_path: Path, postgres_empty_url: str
) -> None:
    with FakeGitHub(slug="neo") as github:
        env = {**serve_env(github, tmp_path / "data"), "NEO_QUEUE_URL": postgres_empty_url}
        done = subprocess.run(
            [str(NEO), "serve", "--port", "1"], env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"neo: error: the queue database has schema version 0; this Neo needs {SCHEMA_VERSION}:"
        " run `neo db migrate` (NEO_QUEUE_URL)"
    ]
