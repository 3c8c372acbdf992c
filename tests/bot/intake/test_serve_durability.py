"""`kill -9` of a real `neo serve` mid-stream loses no acknowledged delivery, on either queue.

Many concurrent clients post signed `@neo` mentions, each a new comment under
a new delivery id. After a random number of 2xx answers the server is killed
with SIGKILL while other requests are still in flight, then restarted on the
same data dir. Every delivery that was answered 2xx must be in the queue,
exactly once; a delivery that was cut off may or may not be (it may have
committed before the kill), but never twice. GitHub then redelivers: the
acknowledged ones answer duplicate, the cut-off ones are queued if they were
not already, and in the end every delivery is queued exactly once.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.cli.main import main
from bot.intake.server import WEBHOOK_PATH
from bot.queue.url import sqlite_url
from tests.bot.serving import Server, corpus, headers, neo_serve, serve_env
from tests.fakes import FakeGitHub

CLIENTS = 24
ROUNDS = 3
# A server is killed after this many 2xx (at random in the range): past the
# first answers to every client, so requests are in flight at the kill, as
# many as at any later point (more deliveries make the run longer, not harder).
KILL_AFTER = (30, 151)
SEED = random.randrange(2**32)


@dataclass(frozen=True, slots=True)
class Delivery:
    delivery_id: str
    comment_id: int
    body: bytes

    @property
    def dedupe_key(self) -> str:
        return f"issue_comment:{self.comment_id}"


@dataclass
class Round:
    """What the clients saw of one server's life."""

    kill_after: int
    attempted: list[Delivery] = field(default_factory=list)
    acknowledged: list[Delivery] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    in_flight: int = 0
    # Requests sent and not yet answered when the server was killed.
    in_flight_at_kill: int = 0


def mention_template() -> dict[str, Any]:
    payload = next(
        copy.deepcopy(p)
        for name, p in corpus()
        if name == "issue_comment" and p.get("action") == "created" and "installation" in p
    )
    payload["comment"]["user"]["type"] = "User"
    payload["sender"]["type"] = "User"
    payload["issue"]["locked"] = False
    return payload


def deliveries() -> Iterator[Delivery]:
    """Endless distinct mentions: comment n under delivery `kill9-n`, on 50 threads."""
    # Copied by JSON: several times cheaper than `copy.deepcopy`, the same value.
    template = json.dumps(mention_template())
    for n in itertools.count(1):
        payload = json.loads(template)
        payload["issue"]["number"] = n % 50 + 1
        payload["comment"]["id"] = 7_000_000_000 + n
        payload["comment"]["body"] = f"@neo fix bug {n}"
        yield Delivery(f"kill9-{n}", 7_000_000_000 + n, json.dumps(payload).encode())


async def post_until_killed(
    server: Server, stream: Iterator[Delivery], kill_after: int, delay: float
) -> Round:
    """Post from CLIENTS concurrent clients; SIGKILL the server `delay` s after the
    kill_after-th 2xx, so the kill falls anywhere between two commits."""
    seen = Round(kill_after)
    loop = asyncio.get_running_loop()

    def kill() -> None:
        seen.in_flight_at_kill = seen.in_flight
        server.kill()

    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:

        async def one_client() -> None:
            # One event loop: the shared iterator needs no lock.
            for delivery in stream:
                seen.attempted.append(delivery)
                seen.in_flight += 1
                try:
                    answer = await client.post(
                        WEBHOOK_PATH,
                        content=delivery.body,
                        headers=headers("issue_comment", delivery.body, delivery.delivery_id),
                    )
                except httpx.TransportError:
                    return  # cut off by the kill: no answer, no promise
                finally:
                    seen.in_flight -= 1
                if not 200 <= answer.status_code < 300 or answer.json()["decision"] != "queued":
                    seen.refused.append(
                        f"{delivery.delivery_id}: {answer.status_code} {answer.text}"
                    )
                    return
                seen.acknowledged.append(delivery)
                if len(seen.acknowledged) == kill_after:
                    loop.call_later(delay, kill)

        await asyncio.gather(*(one_client() for _ in range(CLIENTS)))
    return seen


@pytest.fixture
def queued(capsys: pytest.CaptureFixture[str]) -> Callable[[Server], list[dict[str, Any]]]:
    """`neo jobs list --format json` of a server's queue, run in this process: the
    same `main` as the console script, without a process start per look."""

    def listed(server: Server) -> list[dict[str, Any]]:
        url = server.env.get("NEO_QUEUE_URL") or sqlite_url(
            Path(server.env["NEO_DATA_DIR"]).absolute() / "neo.db"
        )
        capsys.readouterr()
        argv = ["jobs", "list", "--format", "json", "--limit", "1000000", "--queue-url", url]
        assert main(argv) == 0
        jobs = json.loads(capsys.readouterr().out)
        assert isinstance(jobs, list)
        return jobs

    return listed


def assert_each_queued_once(
    jobs: list[dict[str, Any]], acknowledged: list[Delivery], attempted: list[Delivery]
) -> None:
    by_delivery = Counter(job["request"]["delivery_id"] for job in jobs)
    by_key = Counter(job["request"]["dedupe_key"] for job in jobs)
    sent = {delivery.delivery_id: delivery for delivery in attempted}
    context = f"(seed {SEED})"
    lost = [d.delivery_id for d in acknowledged if d.delivery_id not in by_delivery]
    assert lost == [], f"acknowledged deliveries missing from the queue {context}"
    assert [d for d, n in by_delivery.items() if n > 1] == [], f"doubled deliveries {context}"
    assert [k for k, n in by_key.items() if n > 1] == [], f"doubled jobs {context}"
    assert set(by_delivery) <= set(sent), f"jobs nobody sent {context}"
    for job in jobs:
        delivery = sent[job["request"]["delivery_id"]]
        assert job["request"]["dedupe_key"] == delivery.dedupe_key, context
        assert job["request"]["trigger_id"] == delivery.comment_id, context
        assert job["state"] == "queued", context


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(slug="neo") as fake:
        yield fake


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kill_9_mid_stream_loses_and_doubles_nothing(
    github: FakeGitHub,
    tmp_path: Path,
    backend: str,
    request: pytest.FixtureRequest,
    queued: Callable[[Server], list[dict[str, Any]]],
) -> None:
    env = serve_env(github, tmp_path / "data")
    if backend == "postgres":
        # One replica of many on a shared database: what it acknowledged is there.
        env["NEO_QUEUE_URL"] = request.getfixturevalue("postgres_url")
    log = tmp_path / "serve.log"
    chance = random.Random(SEED)
    stream = deliveries()
    attempted: list[Delivery] = []
    acknowledged: list[Delivery] = []

    for round_number in range(ROUNDS):
        with neo_serve(env, log) as server:
            # What the previous server acknowledged survived its kill -9.
            assert_each_queued_once(queued(server), acknowledged, attempted)
            kill_after, delay = chance.randrange(*KILL_AFTER), chance.uniform(0, 0.02)
            seen = asyncio.run(post_until_killed(server, stream, kill_after, delay))
            assert server.process.returncode == -9, f"round {round_number} (seed {SEED})"
        assert seen.refused == [], seen.refused[:5]
        assert len(seen.acknowledged) >= seen.kill_after, f"round {round_number} (seed {SEED})"
        # Requests were in flight when the server died: the interesting case.
        assert seen.in_flight_at_kill > 0, f"round {round_number} (seed {SEED})"
        attempted += seen.attempted
        acknowledged += seen.acknowledged

    with neo_serve(env, log) as server:
        before = queued(server)
        assert_each_queued_once(before, acknowledged, attempted)

        # GitHub redelivers what it was told it got: nothing new is queued.
        again = asyncio.run(redeliver(server, acknowledged))
        assert Counter(again.values()) == Counter({"duplicate": len(acknowledged)})
        assert queued(server) == before

        # And what was cut off: queued now unless it committed before the kill.
        cut_off = [
            d for d in attempted if d.delivery_id not in {a.delivery_id for a in acknowledged}
        ]
        committed = {job["request"]["delivery_id"] for job in before}
        answers = asyncio.run(redeliver(server, cut_off))
        for delivery in cut_off:
            expected = "duplicate" if delivery.delivery_id in committed else "queued"
            assert answers[delivery.delivery_id] == expected, (
                f"{delivery.delivery_id} (seed {SEED})"
            )
        after = queued(server)
        assert_each_queued_once(after, attempted, attempted)
        assert len(after) == len(attempted)


async def redeliver(server: Server, sent: list[Delivery]) -> dict[str, str]:
    """Post `sent` again, same delivery ids; each one's decision."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    decisions: dict[str, str] = {}
    pending = iter(sent)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:

        async def one_client() -> None:
            for delivery in pending:
                answer = await client.post(
                    WEBHOOK_PATH,
                    content=delivery.body,
                    headers=headers("issue_comment", delivery.body, delivery.delivery_id),
                )
                assert answer.status_code == 202, answer.text
                decisions[delivery.delivery_id] = answer.json()["decision"]

        await asyncio.gather(*(one_client() for _ in range(CLIENTS)))
    return decisions
