"""`python -m bench.quality`: bad input is one line and exit 2; --list prints the set."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality.cli import main
from bench.quality.taskset import TASKS_DIR, load_tasks

ROOT = Path(__file__).resolve().parents[3]


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("python -m bench.quality: ")
    return err.strip()


def test_unknown_task(capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["--check", "--tasks", "py-dotenv-quotes,nope"])
    assert err.endswith("unknown task 'nope' (--list shows the tasks)")


def test_malformed_task_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(TASKS_DIR / "py-dotenv-quotes", tmp_path / "py-dotenv-quotes")
    (tmp_path / "py-dotenv-quotes" / "tests.patch").unlink()
    err = _fails(capsys, ["--list", "--tasks-dir", str(tmp_path)])
    assert err.endswith("task py-dotenv-quotes: tests.patch is missing or empty")


def test_missing_key(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    err = _fails(capsys, ["--provider", "anthropic", "--tasks", "py-dotenv-quotes"])
    assert "ANTHROPIC_API_KEY" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "py-dotenv-quotes"], "--provider is required"),
        (["--provider", "nobody"], "unknown provider 'nobody'"),
        (["--check", "--list"], "not allowed with argument"),
        (["--check", "--parallel", "0"], "--parallel must be at least 1"),
        (["--provider", "oracle", "--max-turns", "0"], "max_turns"),
        (["--format", "xml", "--list"], "invalid choice: 'xml'"),
    ],
)
def test_bad_arguments(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert message in _fails(capsys, argv)


def test_list_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    tasks = load_tasks()
    assert [item["id"] for item in listed["tasks"]] == [task.id for task in tasks]
    first = listed["tasks"][0]
    assert set(first) >= {"id", "language", "license", "provenance", "bytes", "title"}
    assert set(first["provenance"]) >= {"repository", "issue", "fix_commit", "base_commit"}
    assert [item["kind"] for item in listed["tasks"]] == [task.kind for task in tasks]
    assert first["kind"] == first["provenance"]["kind"]


def test_the_module_runs_as_a_program() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--list", "--tasks", "go-lru-get-refreshes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "go-lru-get-refreshes" in done.stdout
    assert "\n1 tasks, " in done.stdout
