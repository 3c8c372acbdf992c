"""The summary's `Needed:` lines: what the agent lacked, taken out for the report (pure)."""

from __future__ import annotations

import pytest

from runner.needed import MAX_NEEDS, Needs, split_needs


@pytest.mark.parametrize(
    "line",
    [
        "Needed: network access to registry.npmjs.org",
        "needed: network access to registry.npmjs.org",
        "- Needed: network access to registry.npmjs.org",
        "**Needed:** network access to registry.npmjs.org",
        "**Needed**: network access to registry.npmjs.org",
        "* Needed: network access to registry.npmjs.org  ",
    ],
)
def test_a_needed_line_in_any_common_form_is_taken_out(line: str) -> None:
    summary = f"Fixed the parser.\n\nThe lockfile could not be refreshed.\n{line}\n"

    assert split_needs(summary) == Needs(
        "Fixed the parser.\n\nThe lockfile could not be refreshed.",
        ("network access to registry.npmjs.org",),
    )


def test_several_needs_keep_their_order_once_each_and_are_bounded() -> None:
    lines = [f"Needed: secret NUMBER_{n}" for n in range(MAX_NEEDS + 2)]
    summary = "\n".join(["Done what I could.", "Needed: the `cargo` program", *lines, lines[0]])

    needs = split_needs(summary)

    assert needs.summary == "Done what I could."
    assert needs.needed == ("the `cargo` program", *[f"secret NUMBER_{n}" for n in range(4)])


def test_a_line_quoted_in_a_code_block_or_in_prose_stays() -> None:
    summary = (
        "The error said:\n\n```text\nNeeded: a newer glibc\n```\n\n"
        "Nothing is needed: it all worked.\nThe word Needed: mid-line stays."
    )

    assert split_needs(summary) == Needs(summary)


def test_an_empty_need_is_no_need() -> None:
    assert split_needs("All done.\nNeeded:") == Needs("All done.\nNeeded:")
