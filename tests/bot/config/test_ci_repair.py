"""`ci_repair` in `.github/neo.yml`: off by default, `true` as shorthand, a strict
sub-model with its attempts bounded, and a bad value one line."""

from __future__ import annotations

import pytest

from bot.config import parse_repo_config
from tests.bot.config.test_loading import error_of


def test_ci_repair_is_off_by_default_with_two_attempts() -> None:
    config = parse_repo_config("")
    assert (config.ci_repair.enabled, config.ci_repair.attempts) == (False, 2)


@pytest.mark.parametrize(
    ("text", "enabled", "attempts"),
    [
        ("ci_repair: true\n", True, 2),
        ("ci_repair: false\n", False, 2),
        ("ci_repair: {enabled: true}\n", True, 2),
        ("ci_repair:\n  enabled: true\n  attempts: 5\n", True, 5),
        ("ci_repair: {attempts: 1}\n", False, 1),
        ("ci_repair: {enabled: true, attempts: 10}\n", True, 10),
    ],
)
def test_the_shorthand_and_the_full_form_are_read(text: str, enabled: bool, attempts: int) -> None:
    config = parse_repo_config(text).ci_repair
    assert (config.enabled, config.attempts) == (enabled, attempts)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ci_repair: {enabled: true, attempts: 0}\n", "ci_repair.attempts"),
        ("ci_repair: {enabled: true, attempts: 11}\n", "ci_repair.attempts"),
        ('ci_repair: {enabled: true, attempts: "2"}\n', "ci_repair.attempts"),
        ("ci_repair: {enabled: yes please}\n", "ci_repair.enabled"),
        ("ci_repair: {enabled: 1}\n", "ci_repair.enabled"),
        ("ci_repair: {enable: true}\n", "ci_repair.enable"),
        ("ci_repair: sometimes\n", "ci_repair"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_field(text: str, problem: str) -> None:
    error = str(error_of(text))
    assert problem in error
    assert "\n" not in error.strip()
    assert "Traceback" not in error
