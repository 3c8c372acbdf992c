from __future__ import annotations

import pytest

from runner.skills import Skill, Skipped, parse_skill
from runner.skills.skill import MAX_SKILL_BYTES


def parse(text: str | bytes, folder: str = "fix-ci") -> Skill | Skipped:
    data = text.encode() if isinstance(text, str) else text
    return parse_skill(data, folder=folder, path="x/SKILL.md", source="repository")


def test_a_valid_skill_has_its_name_one_line_description_and_body() -> None:
    skill = parse("---\nname: fix-ci\ndescription: Fix\n  a red build.\n---\n\nRead the log.\n")

    assert skill == Skill(
        "fix-ci", "Fix a red build.", "x/SKILL.md", "x/SKILL.md", "Read the log.", "repository"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: fix-ci\n", "no front matter: the file must start with a line '---'"),
        ("---\nname: fix-ci\ndescription: d\n", "front matter is not closed by a line '---'"),
        ("---\nname: [fix\n---\nbody\n", "front matter is not valid YAML at line 3"),
        ("---\n- fix-ci\n---\nbody\n", "front matter is not a mapping of keys to values"),
        ("---\ndescription: d\n---\nbody\n", "front matter has no `name`"),
        ("---\nname: 7\ndescription: d\n---\nbody\n", "`name` must be text, got int"),
        ("---\nname: fix-ci\ndescription: [d]\n---\nb\n", "`description` must be text, got list"),
        ("---\nname: fix-ci\n---\nbody\n", "front matter has no `description`"),
        ("---\nname: fix-ci\ndescription: '  '\n---\nbody\n", "front matter has no `description`"),
        (
            "---\nname: fix-ci\ndescription: d\n---\n\n  \n",
            "no instructions after the front matter",
        ),
        (
            "---\nname: fix-ci\ndescription: a \x1b[31m red\n---\nbody\n",
            "front matter is not valid YAML",
        ),
        (
            '---\nname: fix-ci\ndescription: "a \\e[31m red"\n---\nbody\n',
            "description has control characters",
        ),
    ],
)
def test_each_rule_of_the_front_matter_has_its_own_reason(text: str, reason: str) -> None:
    assert parse(text) == Skipped("x/SKILL.md", reason)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Fix-CI", "not kebab-case"),
        ("fix--ci", "not kebab-case"),
        ("-fix", "not kebab-case"),
        ("fix-", "not kebab-case"),
        ("'5'", "not kebab-case"),
        ("fix_ci", "not kebab-case"),
        ("a" * 65, "longer than 64 characters"),
        ("other", "does not match its folder 'fix-ci'"),
    ],
)
def test_a_name_must_be_kebab_case_short_and_its_folders(name: str, reason: str) -> None:
    skipped = parse(f"---\nname: {name}\ndescription: d\n---\nbody\n")

    assert isinstance(skipped, Skipped)
    assert reason in skipped.reason


def test_a_64_character_name_and_a_1024_character_description_are_the_limits() -> None:
    name = "a" * 64
    ok = parse(f"---\nname: {name}\ndescription: {'d' * 1024}\n---\nbody\n", folder=name)
    long = parse(f"---\nname: {name}\ndescription: {'d' * 1025}\n---\nbody\n", folder=name)

    assert isinstance(ok, Skill)
    assert long == Skipped("x/SKILL.md", "description is longer than 1024 characters")


def test_a_file_over_64_kib_or_not_utf8_is_skipped_unparsed() -> None:
    big = b"---\nname: fix-ci\ndescription: d\n---\n" + b"x" * MAX_SKILL_BYTES

    assert parse(big) == Skipped("x/SKILL.md", f"larger than 64 KiB ({len(big)} bytes)")
    assert parse(b"---\nname: fix-ci\xff\n---\n") == Skipped("x/SKILL.md", "not valid UTF-8")
