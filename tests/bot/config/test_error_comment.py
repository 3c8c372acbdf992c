"""bot.config.error_comment: the one comment Neo posts for an invalid file."""

from __future__ import annotations

from bot.config.docs import DEFAULT_DOCS_URL
from bot.config.error_comment import MAX_PROBLEMS_SHOWN, render_config_error
from bot.config.loading import RepoConfigError
from bot.github.markers import CONFIG_ERROR_MARKER
from tests.bot.config.test_loading import error_of

DOCS = "https://github.com/example/neo/blob/v2/docs"


def test_the_comment_names_the_file_the_line_the_field_and_the_problem() -> None:
    comment = render_config_error(error_of("draft: true\nmax_turns: 501"), docs_url=DOCS)

    assert comment.startswith(CONFIG_ERROR_MARKER + "\n")
    assert "**Neo did not run:** `.github/neo.yml` on the default branch is invalid." in comment
    assert "- Line 2, `max_turns`: `Input should be less than or equal to 500`" in comment
    assert "Nothing ran." in comment


def test_the_reference_is_an_absolute_link_to_neos_documentation() -> None:
    # A relative link resolves under the URL: a 404 in the user's repository.
    comment = render_config_error(error_of("max_turns: 501"), docs_url=DOCS + "/")

    assert f"[Neo's configuration reference]({DOCS}/configuration.md)" in comment
    assert "](docs/" not in comment
    default = render_config_error(error_of("max_turns: 501"), docs_url=DEFAULT_DOCS_URL)
    assert f"]({DEFAULT_DOCS_URL}/configuration.md)" in default
    assert DEFAULT_DOCS_URL.startswith("https://")


def test_every_problem_of_the_file_is_listed_in_its_order() -> None:
    text = "max_turns: 501\nmodle: x\nci_repair: {attempts: 99}\nschedules: [{prompt: p}]\n"
    comment = render_config_error(error_of(text), docs_url=DOCS)

    assert "on the default branch has 4 problems." in comment
    listed = [line for line in comment.splitlines() if line.startswith("- ")]
    assert listed == [
        "- Line 1, `max_turns`: `Input should be less than or equal to 500`",
        "- Line 2, `modle`: `unknown field (did you mean 'model'?)`",
        "- Line 3, `ci_repair.attempts`: `Input should be less than or equal to 10`",
        "- Line 4, `schedules[0].cron`: `Field required`",
    ]


def test_a_yaml_error_gives_its_line_and_no_setting() -> None:
    comment = render_config_error(error_of("a: b\n  c: d\n"), docs_url=DOCS)

    assert "- Line 2: `could not parse YAML: mapping values are not allowed here`" in comment


def test_a_file_with_hundreds_of_problems_lists_the_first_ones() -> None:
    text = "allowed_bots: [" + ", ".join(["'not a login'"] * 100) + "]\n"
    comment = render_config_error(error_of(text), docs_url=DOCS)

    listed = [line for line in comment.splitlines() if line.startswith("- ")]
    assert len(listed) == MAX_PROBLEMS_SHOWN + 1
    assert listed[-1] == f"- … and {100 - MAX_PROBLEMS_SHOWN} more"
    assert "has 100 problems" in comment


def test_file_text_in_the_comment_can_neither_format_nor_mention() -> None:
    error = error_of("schedules: [{cron: '0 0 * * *', prompt: x, '@octocat `**x**`': 1}]")
    comment = render_config_error(error, docs_url=DOCS)

    [problem] = [line for line in comment.splitlines() if line.startswith("- ")]
    # Inside a code span that no backtick in the text can close.
    assert problem.startswith("- Line 1, `` schedules[0].@octocat `**x**` ``: ")


def test_a_long_problem_is_shortened_in_the_comment() -> None:
    error = RepoConfigError("x", source=".github/neo.yml", problem="y" * 1000, field="model")

    [problem] = [
        line
        for line in render_config_error(error, docs_url=DOCS).splitlines()
        if line.startswith("- ")
    ]
    assert len(problem) < 350
    assert problem.endswith("…`")
