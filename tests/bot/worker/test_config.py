"""Config resolution's pure parts: overrides checked, applied, and named in messages;
what an invalid file is answered with."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import RepoConfig, RepoConfigError, parse_repo_config, render_config_error
from bot.config.docs import DEFAULT_DOCS_URL
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


FILE = RepoConfig(
    model="file-model",
    max_turns=1,
    time_limit=9,
    branch_prefix="file/",
    allowed_users=("maintain", "write"),
)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, {"model": "file-model", "max_turns": 1, "time_limit": 9, "branch_prefix": "file/"}),
        (
            {"model": "input-model", "max_turns": 5, "time_limit": 3, "branch_prefix": "ci/"},
            {"model": "input-model", "max_turns": 5, "time_limit": 3, "branch_prefix": "ci/"},
        ),
        # Widened or narrowed, the override replaces the file's list whole.
        ({"allowed_users": ("triage", "write")}, {"allowed_users": ("triage", "write")}),
        ({"allowed_users": ("admin",)}, {"allowed_users": ("admin",), "model": "file-model"}),
    ],
)
def test_each_override_wins_over_its_field_of_the_file(
    overrides: dict[str, Any], expected: dict[str, Any]
) -> None:
    config = overridden(FILE, ConfigSource(overrides=overrides), ".github/neo.yml")
    assert {name: getattr(config, name) for name in expected} == expected


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("max_turns: lots\n", "max_turns", "Input should be a valid integer"),
        # Python refuses int("1" + "0" * 5000): once a traceback and "internal error".
        ("max_turns: 1" + "0" * 5000 + "\n", "max_turns", "the number is too large (5001 digits)"),
        ("model: 2001-02-30\n", "model", "'2001-02-30' is not a valid date or time"),
        (
            "sandbox_image: Neo-Sandbox:Local\n",
            "sandbox_image",
            "'Neo-Sandbox:Local' is not a valid image reference: the repository name must be"
            " lowercase",
        ),
    ],
)
def test_an_invalid_file_is_answered_by_one_comment_naming_it_and_the_field(
    text: str, field: str, problem: str
) -> None:
    with pytest.raises(RepoConfigError) as raised:
        parse_repo_config(text, source="ci/neo.yml")
    assert str(raised.value) == f"ci/neo.yml: {field}: {problem}"
    comment = render_config_error(raised.value, docs_url=DEFAULT_DOCS_URL)
    assert "**Neo did not run:** `ci/neo.yml` on the default branch is invalid." in comment
    assert f"- Line 1, `{field}`: " in comment
    assert "internal error" not in comment


@pytest.mark.parametrize(
    ("overrides", "source"),
    [({}, "`.github/neo.yml`"), ({"allowed_users": ("admin",)}, "the worker's settings")],
)
def test_the_reply_names_where_allowed_users_is_set(overrides: dict[str, Any], source: str) -> None:
    config = ConfigSource(overrides=overrides)
    assert config.allowed_users_source() == source
    assert config.fallback().allowed_users == RepoConfig(**overrides).allowed_users
