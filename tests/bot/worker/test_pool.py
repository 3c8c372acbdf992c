import json
import logging

import docker
import pytest

from bot.worker import pool


class _Silent(Exception):
    """An error whose text is empty, as some of docker's transport errors are."""

    def __str__(self) -> str:
        return ""


def test_a_sweep_that_fails_without_a_message_logs_one_line_and_start_up_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreachable(*args: object, **kwargs: object) -> docker.DockerClient:
        raise _Silent

    monkeypatch.setattr(docker, "from_env", unreachable)
    with caplog.at_level(logging.WARNING, logger="neo.worker"):
        pool.sweep_sandbox_orphans()
    [record] = caplog.records
    assert json.loads(record.getMessage()) == {"event": "sweep_skipped", "reason": "_Silent"}
