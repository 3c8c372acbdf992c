"""runner.subject: a commit's subject from the model's summary, from tables."""

from __future__ import annotations

import pytest

from runner.subject import MAX_SUBJECT, CommitText, files_subject, summary_subject


@pytest.mark.parametrize(
    ("summary", "subject"),
    [
        ("Parse dates in UTC\n\nThe test failed east of UTC.", "Parse dates in UTC"),
        ("## Summary\n\nParse dates in UTC.\n\n## Changes\n- x", "Parse dates in UTC"),
        ("**Summary:** Add a `--json` flag to export", "Add a `--json` flag to export"),
        ("Summary: add a --json flag to export", "Add a --json flag to export"),
        ("# Add a --json flag to export", "Add a --json flag to export"),
        ("- [x] Add a --json flag to export", "Add a --json flag to export"),
        ("> Add a --json flag to export", "Add a --json flag to export"),
        (
            "I've added a --json flag to the export command.",
            "Added a --json flag to the export command",
        ),
        ("This change adds a --json flag to export.", "Adds a --json flag to export"),
        # Not a subject: a lead-in to a list, too few words, code first.
        ("Here is what I did:\n- a\n- b", None),
        ("Done.", None),
        ("Fixed it", None),
        ("```diff\n+x\n```\nAdd x", None),
        ("", None),
        ("\n\n## Summary\n\n", None),
    ],
)
def test_the_subject_is_the_summarys_first_line_of_prose(summary: str, subject: str | None) -> None:
    assert summary_subject(summary) == subject


@pytest.mark.parametrize(
    ("line", "subject"),
    [
        # Its first sentence, or first clause, when that fits.
        (
            "Parse dates in UTC in parse_date. The test failed on hosts east of UTC because of"
            " local time.",
            "Parse dates in UTC in parse_date",
        ),
        (
            "Parse dates in UTC in `parse_date` so the test no longer depends on the host's"
            " time zone",
            "Parse dates in UTC in `parse_date`",
        ),
        # Else cut at a word, never inside a code span.
        (
            "Teach the exporter's `--format` option every format the importer has ever understood",
            "Teach the exporter's `--format` option every format the importer has…",
        ),
        ("Rename `" + "a" * 80 + "` to b", "Rename…"),
    ],
)
def test_a_long_line_is_brought_to_a_conventional_length(line: str, subject: str) -> None:
    found = summary_subject(line)
    assert found == subject
    assert len(found) <= MAX_SUBJECT
    assert found.count("`") % 2 == 0


def test_a_line_that_repeats_the_issues_title_is_no_subject() -> None:
    title = "Dates are parsed in local time!"
    assert summary_subject("dates are parsed in local time", avoid=title) is None
    assert summary_subject("Parse dates in UTC", avoid=title) == "Parse dates in UTC"


@pytest.mark.parametrize(
    ("paths", "subject"),
    [
        ([], "Change the repository"),
        (["src/app.py"], "Change src/app.py"),
        (["src/app.py", "tests/test_app.py"], "Change src/app.py and tests/test_app.py"),
        (["a.py", "b.py", "c.py"], "Change a.py and 2 more files"),
        (["deeply/" * 12 + "module.py"], "Change module.py"),
    ],
)
def test_without_a_line_the_subject_names_the_files(paths: list[str], subject: str) -> None:
    assert files_subject(paths) == subject


def test_a_commits_text_is_the_subject_then_its_body() -> None:
    commit = CommitText(body="Refs #3\n\nNeo-CI-Repair: 1", fallback="Make the test check pass")
    assert commit.message("Escape the title\n\nMore.", ["a"]) == (
        "Escape the title",
        "Escape the title\n\nRefs #3\n\nNeo-CI-Repair: 1",
    )
    assert commit.message("Done.", ["a"])[0] == "Make the test check pass"
    assert CommitText().message("", ["a", "b"]) == ("Change a and b", "Change a and b")
