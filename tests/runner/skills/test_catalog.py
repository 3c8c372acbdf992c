from __future__ import annotations

from runner.skills import Skill, catalog
from runner.skills.catalog import MAX_CATALOG_BYTES


def skill(name: str, description: str = "When to use it.") -> Skill:
    path = f".neo/skills/{name}/SKILL.md"
    return Skill(name, description, path, path, "body", "repository")


def test_one_sorted_line_per_skill_the_same_bytes_on_every_call() -> None:
    skills = [skill("zeta"), skill("alpha", "First — with a dash.")]

    first = catalog(skills)

    assert first == catalog(list(reversed(skills)))
    assert first.splitlines()[-2:] == [
        "- alpha — First — with a dash. (.neo/skills/alpha/SKILL.md)",
        "- zeta — When to use it. (.neo/skills/zeta/SKILL.md)",
    ]
    assert first.startswith("# Skills\n")
    assert catalog([]) == ""


def test_a_long_catalog_is_capped_at_8_kib_and_says_how_many_were_left_out() -> None:
    skills = [skill(f"skill-{i:03d}", "d" * 200) for i in range(100)]

    shown = catalog(skills)

    assert len(shown.encode()) <= MAX_CATALOG_BYTES
    listed = [line for line in shown.splitlines() if line.startswith("- skill-")]
    assert listed[0].startswith("- skill-000 ")
    more = 100 - len(listed)
    assert more > 0
    assert shown.endswith(f"- ... and {more} more not listed (the catalog is capped at 8 KiB)")
    assert catalog(skills) == shown


def test_a_catalog_that_fits_exactly_has_no_marker() -> None:
    skills = [skill("only")]
    size = len(catalog(skills).encode())

    assert catalog(skills, limit=size) == catalog(skills)
    assert "more not listed" in catalog([*skills, skill("other")], limit=size + 10)
