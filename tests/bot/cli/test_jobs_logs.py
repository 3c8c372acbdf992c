"""`neo jobs logs`: a job's event log printed oldest first, on a SQLite file and on
PostgreSQL; `--follow` as a process of its own while the job runs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.exits import EXIT_OK, EXIT_USAGE
from bot.jobs import Conclusion, JobOutcome
from bot.queue import JobQueue, open_queue, sqlite_url
from tests.bot.queue.factories import make_request

NEO = Path(sys.executable).with_name("neo")
PATIENCE = 60.0

Events = list[tuple[float, str, dict[str, object]]]

_RUN: Events = [
    (1_800_000_000.0, "state", {"state": "queued"}),
    (1_800_000_001.0, "state", {"state": "running"}),
    (1_800_000_002.0, "text", {"text": "Let me run \x1b[31mthe "}),
    (1_800_000_002.5, "text", {"text": "tests.\nThen fix them."}),
    (
        1_800_000_003.0,
        "tool_call",
        {"call_id": "c1", "name": "bash", "args": {"command": "pytest -q tests/test_date.py"}},
    ),
    (
        1_800_000_005.0,
        "tool_result",
        {
            "call_id": "c1",
            "name": "bash",
            "is_error": True,
            "output": "F.\n1 failed, 1 passed\nexit code: 1",
            "output_bytes": 38,
            "truncated": False,
            "duration_ms": 2000,
        },
    ),
    (
        1_800_000_006.0,
        "turn",
        {
            "turn": 2,
            "input_tokens": 12_345,
            "output_tokens": 678,
            "cost_usd": 0.0123,
            "limits": {"turns": 98, "cost_usd": 1.98, "seconds": 1790.0},
        },
    ),
]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The queue's URL, also in NEO_QUEUE_URL; the database exists, empty."""
    if request.param == "postgres":
        found = str(request.getfixturevalue("postgres_url"))
    else:
        found = sqlite_url(tmp_path / "data" / "neo.db")
        asyncio.run(open_queue(found).close())
    monkeypatch.setenv("NEO_QUEUE_URL", found)
    return found


async def _job(queue: JobQueue, events: Events) -> int:
    (job_id,) = (await queue.enqueue("d1", [make_request("d1")])).job_ids
    await queue.claim("w1", 60)
    if events:
        await queue.append_events(job_id, events)
    return job_id


def _with_job(url: str, events: Events) -> int:
    async def fill() -> int:
        queue = open_queue(url)
        try:
            return await _job(queue, events)
        finally:
            await queue.close()

    return asyncio.run(fill())


def test_the_text_form_shows_each_tool_call_with_its_arguments(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = _with_job(url, _RUN)

    assert main(["jobs", "logs", str(job_id)]) == EXIT_OK

    out = capsys.readouterr().out
    assert out.splitlines() == [
        "08:00:00  ── queued",
        "08:00:01  ── running",
        # The model's text as one message, its escape sequence made harmless.
        "08:00:02  Let me run \\x1b[31mthe tests.",
        "    Then fix them.",
        '08:00:03  ▶ bash {"command": "pytest -q tests/test_date.py"}',
        "08:00:05  ◀ bash error 2.0s (38 bytes)",
        "    F.",
        "    1 failed, 1 passed",
        "    exit code: 1",
        "08:00:06  turn 2 · 12,345 in / 678 out tokens · $0.0123 · left: 98 turns, $1.98, 1790s",
    ]


def test_the_json_form_is_one_record_a_line(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    job_id = _with_job(url, _RUN)

    assert main(["jobs", "logs", str(job_id), "--format", "json"]) == EXIT_OK

    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"job_id": job_id, "seq": n, "at": at, "kind": kind, "data": data}
        for n, (at, kind, data) in enumerate(_RUN, start=1)
    ]


def test_an_unknown_job_is_one_line_and_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "logs", "4242", "--follow"]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "neo: error: no job 4242 in the queue\n"


def test_a_job_without_events_prints_nothing(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    job_id = _with_job(url, [])
    assert main(["jobs", "logs", str(job_id)]) == EXIT_OK
    assert capsys.readouterr().out == ""


async def test_follow_prints_a_running_jobs_events_as_they_come_and_ends_with_it(
    url: str,
) -> None:
    queue = open_queue(url)
    try:
        job_id = await _job(queue, _RUN[:2])
        process = await asyncio.create_subprocess_exec(
            str(NEO),
            "jobs",
            "logs",
            str(job_id),
            "--follow",
            "--format",
            "json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "NEO_QUEUE_URL": url},
        )
        try:
            assert process.stdout is not None
            seen = []
            for _ in range(2):  # what was there before it started
                line = await asyncio.wait_for(process.stdout.readline(), PATIENCE)
                seen.append(json.loads(line))
            # Then, live, what the job does: each seen before the next is written.
            for event in _RUN[2:]:
                await queue.append_events(job_id, [event])
                line = await asyncio.wait_for(process.stdout.readline(), PATIENCE)
                seen.append(json.loads(line))
            ending: Events = [
                (1_800_000_009.0, "state", {"state": "finished", "conclusion": "success"})
            ]
            await queue.append_events(job_id, ending)
            await queue.finish(job_id, "w1", JobOutcome(conclusion=Conclusion.SUCCESS))
            rest, err = await asyncio.wait_for(process.communicate(), PATIENCE)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == EXIT_OK, err.decode()
        seen += [json.loads(line) for line in rest.decode().splitlines()]
        assert [(e["seq"], e["kind"], e["data"]) for e in seen] == [
            (n, kind, data) for n, (_, kind, data) in enumerate(_RUN + ending, start=1)
        ]
    finally:
        await queue.close()
