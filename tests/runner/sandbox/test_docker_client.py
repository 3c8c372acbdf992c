"""The docker client: an engine's API version is asked once per process, not per job."""

from __future__ import annotations

import pytest
from docker.api.client import APIClient

from runner.sandbox import docker as engine
from runner.sandbox.docker import docker_client


def test_an_engine_is_asked_its_version_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    original = vars(APIClient)["_retrieve_server_version"]

    def counted(self: APIClient) -> str:
        asked.append(str(self.base_url))
        return str(original(self))

    monkeypatch.setattr(APIClient, "_retrieve_server_version", counted)
    monkeypatch.setattr(engine, "_VERSIONS", {})

    first, second = docker_client(), docker_client()

    assert len(asked) == 1
    assert second.api.api_version == first.api.api_version
    # The second client, told the version, still reaches the engine.
    assert second.ping()
