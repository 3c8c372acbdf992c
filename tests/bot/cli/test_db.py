"""`neo db migrate` in-process, against a real PostgreSQL database."""

from __future__ import annotations

import pytest

from bot.cli.main import main
from bot.queue import open_queue
from bot.queue.pg_schema import SCHEMA_VERSION
from runner.errors import ConfigError


def test_migrate_brings_a_new_database_up_and_then_does_nothing(
    postgres_empty_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="run `neo db migrate`"):
        open_queue(postgres_empty_url)
    monkeypatch.setenv("NEO_QUEUE_URL", postgres_empty_url)
    assert main(["db", "migrate"]) == 0
    assert capsys.readouterr().out == (
        f"migrated the queue database from schema version 0 to {SCHEMA_VERSION}\n"
    )
    assert main(["db", "migrate", "--queue-url", postgres_empty_url]) == 0
    assert capsys.readouterr().out == (
        f"the queue database is at schema version {SCHEMA_VERSION}; nothing to do\n"
    )
    open_queue(postgres_empty_url)  # current now: no error


@pytest.mark.parametrize(
    ("argv", "url", "message"),
    [
        (["db", "migrate"], None, "no queue database: set NEO_QUEUE_URL or pass --queue-url"),
        (
            ["db", "migrate", "--queue-url", "sqlite:///neo.db"],
            None,
            "`neo db migrate` works on postgresql:// URLs; a SQLite queue migrates itself"
            " (--queue-url)",
        ),
        (
            ["db", "migrate"],
            "postgresql://neo:hunter2@127.0.0.1:1/neo",
            "cannot reach the queue database: ",
        ),
    ],
)
def test_bad_input_is_one_line_without_the_password(
    argv: list[str],
    url: str | None,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NEO_QUEUE_URL", raising=False)
    if url is not None:
        monkeypatch.setenv("NEO_QUEUE_URL", url)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"neo: error: {message}")
    assert captured.err.count("\n") == 1
    assert "hunter2" not in captured.err
