"""neo_home: Neo's directory from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.home import neo_home


def test_neo_home_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO_HOME", str(tmp_path / "custom"))
    assert neo_home() == tmp_path / "custom"
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("NEO_HOME", "")
    assert neo_home() == tmp_path / "user" / ".neo"
    monkeypatch.delenv("NEO_HOME")
    assert neo_home() == tmp_path / "user" / ".neo"


def test_neo_home_reads_a_given_environment_instead_of_the_process_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO_HOME", str(tmp_path / "process"))
    assert neo_home({"NEO_HOME": str(tmp_path / "given")}) == tmp_path / "given"
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert neo_home({}) == tmp_path / "user" / ".neo"
