"""Config resolution's pure parts: overrides checked, applied, and named in messages."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import RepoConfig
from bot.worker.config import ConfigSource, overridden
from runner.errors import ConfigError


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_turns": 0}, "config override max_turns: Input should be greater than or equal to 1"),
        ({"allowed_users": ("root",)}, "config override allowed_users.0: Input should be 'admin'"),
        ({"colour": "blue"}, "config override colour: Extra inputs are not permitted"),
    ],
)
def test_a_bad_override_is_one_line_naming_it(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ConfigSource(overrides=overrides)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("path", "expected"), [("/ci/neo.yml/", "ci/neo.yml"), ("/", ".github/neo.yml")]
)
def test_the_path_is_relative_to_the_repository(path: str, expected: str) -> None:
    assert ConfigSource(path=path).path == expected


def test_overrides_win_over_the_file_and_the_file_decides_the_rest() -> None:
    source = ConfigSource(overrides={"max_turns": 7})
    config = overridden(RepoConfig(model="m", max_turns=3), source, ".github/neo.yml")
    assert (config.max_turns, config.model) == (7, "m")
    assert overridden(RepoConfig(max_turns=3), ConfigSource(), "x").max_turns == 3


@pytest.mark.parametrize(
    ("overrides", "source"),
    [({}, "`.github/neo.yml`"), ({"allowed_users": ("admin",)}, "the worker's settings")],
)
def test_the_reply_names_where_allowed_users_is_set(overrides: dict[str, Any], source: str) -> None:
    config = ConfigSource(overrides=overrides)
    assert config.allowed_users_source() == source
    assert config.fallback().allowed_users == RepoConfig(**overrides).allowed_users
