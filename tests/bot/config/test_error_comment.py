"""bot.config.error_comment: the one comment Neo posts for an invalid file."""

from __future__ import annotations

from bot.config.error_comment import render_config_error
from bot.config.loading import RepoConfigError
from bot.github.markers import CONFIG_ERROR_MARKER
from tests.bot.config.test_loading import error_of


def test_the_comment_names_the_file_the_field_and_the_problem() -> None:
    comment = render_config_error(error_of("max_turns: 501"))

    assert comment.startswith(CONFIG_ERROR_MARKER + "\n")
    assert "**Neo did not run:** `.github/neo.yml` on the default branch is invalid." in comment
    assert "- **Setting:** `max_turns`" in comment
    assert "- **Problem:** `Input should be less than or equal to 500`" in comment
    assert "Nothing ran." in comment
    assert "[configuration reference](docs/configuration.md)" in comment
    assert "Line" not in comment


def test_the_comment_gives_the_line_of_a_yaml_error_and_any_reference_url() -> None:
    url = "https://github.com/example/neo/blob/main/docs/configuration.md"
    comment = render_config_error(error_of("a: b\n  c: d\n"), reference_url=url)

    assert "- **Line:** 2" in comment
    assert "- **Problem:** `could not parse YAML: mapping values are not allowed here`" in comment
    assert "Setting" not in comment
    assert f"[configuration reference]({url})" in comment


def test_file_text_in_the_comment_can_neither_format_nor_mention() -> None:
    error = error_of("schedules: [{cron: '0 0 * * *', prompt: x, '@octocat `**x**`': 1}]")
    comment = render_config_error(error)

    setting = next(line for line in comment.splitlines() if line.startswith("- **Setting:**"))
    # Inside a code span that no backtick in the text can close.
    assert setting == "- **Setting:** `` schedules[0].@octocat `**x**` ``"


def test_a_long_problem_is_shortened_in_the_comment() -> None:
    error = RepoConfigError("x", source=".github/neo.yml", problem="y" * 1000, field="model")

    problem = next(line for line in render_config_error(error).splitlines() if "Problem" in line)
    assert len(problem) < 350
    assert problem.endswith("…`")
