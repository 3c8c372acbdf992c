"""`neo jobs` in-process over a real queue: a SQLite file, and a PostgreSQL database."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.jobs import Conclusion, JobOutcome, JobState
from bot.queue import open_queue, sqlite_url
from tests.bot.queue.factories import make_request


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


@pytest.fixture
def jobs(url: str) -> dict[str, int]:
    """Four jobs: queued, running, failed and a queued one in another repository."""

    async def fill() -> dict[str, int]:
        queue = open_queue(url)
        try:
            ids: dict[str, int] = {}
            for name, repository, number in (
                ("failed", "octo/hello", 1),
                ("running", "octo/hello", 2),
                ("queued", "octo/hello", 2),
                ("elsewhere", "octo/world", 1),
            ):
                request = make_request(
                    name,
                    repository=repository,
                    number=number,
                    instruction=f"@neo {name}\x1b[31m\nsecond line",
                )
                (ids[name],) = (await queue.enqueue(name, [request])).job_ids
            for _ in range(2):
                job = await queue.claim("w1", 60)
                assert job is not None
                if job.id == ids["failed"]:
                    await queue.finish(
                        job.id, "w1", JobOutcome(conclusion=Conclusion.FAILED, error="boom")
                    )
            return ids
        finally:
            await queue.close()

    return asyncio.run(fill())


def state_of(url: str, job_id: int) -> JobState:
    async def get() -> JobState:
        queue = open_queue(url)
        try:
            job = await queue.get(job_id)
        finally:
            await queue.close()
        assert job is not None
        return job.state

    return asyncio.run(get())


def test_list_json_prints_one_array(
    jobs: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "list", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1
    listed = json.loads(out)
    assert [job["id"] for job in listed] == sorted(jobs.values(), reverse=True)
    running = next(job for job in listed if job["id"] == jobs["running"])
    assert running["state"] == "running"
    assert running["worker"] == "w1"
    assert running["request"]["thread"] == {
        "repository": "octo/hello",
        "number": 2,
        "is_pull_request": False,
    }


def test_list_filters(jobs: dict[str, int], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "list", "--state", "queued", "--format", "json"]) == 0
    assert {job["id"] for job in json.loads(capsys.readouterr().out)} == {
        jobs["queued"],
        jobs["elsewhere"],
    }
    assert main(["jobs", "list", "--repo", "Octo/World", "--format", "json"]) == 0
    assert [job["id"] for job in json.loads(capsys.readouterr().out)] == [jobs["elsewhere"]]
    assert main(["jobs", "list", "--limit", "1", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_list_text_is_a_table_without_control_characters(
    jobs: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "STATE",
        "TRIES",
        "THREAD",
        "KIND",
        "AUTHOR",
        "CREATED",
        "INSTRUCTION",
    ]
    assert len(lines) == 1 + len(jobs)
    assert "\x1b" not in out
    assert "@neo failed\\x1b[31m second line" in out


def test_list_of_an_empty_queue(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "list"]) == 0
    assert capsys.readouterr().out == "no jobs\n"
    assert main(["jobs", "list", "--format", "json"]) == 0
    assert capsys.readouterr().out == "[]\n"


def test_show(jobs: dict[str, int], capsys: pytest.CaptureFixture[str]) -> None:
    job_id = jobs["failed"]
    assert main(["jobs", "show", str(job_id), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["id"], shown["state"]) == (job_id, "failed")
    assert (shown["result"]["conclusion"], shown["result"]["error"]) == ("failed", "boom")

    assert main(["jobs", "show", str(job_id)]) == 0
    out = capsys.readouterr().out
    assert f"{job_id} (task)" in out
    assert "octo/hello#1 (issue)" in out
    assert '"error": "boom"' in out
    assert "\x1b" not in out


def test_retry(jobs: dict[str, int], url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "retry", str(jobs["failed"])]) == 0
    assert capsys.readouterr().out == f"job {jobs['failed']} is queued again\n"
    assert state_of(url, jobs["failed"]) == JobState.QUEUED


def test_retry_of_a_running_job_is_refused(
    jobs: dict[str, int], url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "retry", str(jobs["running"])]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"neo: cannot retry job {jobs['running']}: it is running;"
        " only a failed or cancelled job can be retried\n"
    )
    assert state_of(url, jobs["running"]) == JobState.RUNNING


def test_cancel(jobs: dict[str, int], url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "cancel", str(jobs["queued"])]) == 0
    assert capsys.readouterr().out == f"job {jobs['queued']} is cancelled\n"
    assert state_of(url, jobs["queued"]) == JobState.CANCELLED

    assert main(["jobs", "cancel", str(jobs["running"])]) == 0
    assert "asked to stop" in capsys.readouterr().out
    assert state_of(url, jobs["running"]) == JobState.RUNNING

    assert main(["jobs", "cancel", str(jobs["failed"])]) == 1
    assert capsys.readouterr().err == (
        f"neo: cannot cancel job {jobs['failed']}: it is already failed\n"
    )


@pytest.mark.parametrize("command", ["show", "retry", "cancel"])
def test_unknown_id(jobs: dict[str, int], command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", command, "999"]) == 2
    assert capsys.readouterr().err == "neo: error: no job 999 in the queue\n"


def test_queue_url_flag_and_missing_database(
    jobs: dict[str, int],
    url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NEO_QUEUE_URL")
    assert main(["jobs", "list", "--queue-url", url, "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(jobs)

    missing = tmp_path / "nowhere" / "neo.db"
    assert main(["jobs", "list", "--queue-url", sqlite_url(missing)]) == 2
    assert capsys.readouterr().err == (
        f"neo: error: no queue database at {missing} (--queue-url)\n"
    )
    assert not missing.parent.exists()

    # Nothing listens on port 1.
    assert main(["jobs", "list", "--queue-url", "postgresql://u:secret@127.0.0.1:1/neo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neo: error: cannot reach the queue database: ")
    assert err.endswith(" (--queue-url)\n")
    assert "secret" not in err
    assert err.count("\n") == 1


def test_bad_usage_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["jobs", "show", "abc"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "a job id is a whole number" in err
