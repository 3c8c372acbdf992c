from __future__ import annotations

import pytest

from runner.skills import Skill, invocation_text, invoked


def skill(name: str) -> Skill:
    return Skill(name, "d", f"{name}/SKILL.md", f"{name}/SKILL.md", f"Body of {name}.", "builtin")


SKILLS = [skill("release-notes"), skill("fix-ci"), skill("bump")]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("$release-notes", ["release-notes"]),
        ("@neo /fix-ci please", ["fix-ci"]),
        ("run $fix-ci, then $release-notes.", ["fix-ci", "release-notes"]),
        ("($bump) and '$fix-ci'", ["bump", "fix-ci"]),
        ("$bump $bump /bump", ["bump"]),
        ("$bump?", ["bump"]),
        # Unknown names, money, paths and longer words invoke nothing.
        ("$unknown /nothing", []),
        ("it costs $5 or /5", []),
        ("see docs/$fix-ci and /usr/bump and ./bump", []),
        ("/fix-ci/SKILL.md and /bump.md", []),
        ("$fix-cis $bumpy $fix-ci-more x$bump", []),
        ("$Fix-CI", []),
    ],
)
def test_only_a_known_name_standing_alone_invokes_a_skill(text: str, names: list[str]) -> None:
    assert [s.name for s in invoked(text, SKILLS)] == names


def test_the_bodies_are_added_under_their_names_in_order() -> None:
    added = invocation_text([SKILLS[1], SKILLS[0]])

    assert added.index('<skill name="fix-ci">\nBody of fix-ci.\n</skill>') < added.index(
        '<skill name="release-notes">'
    )
    assert invocation_text([]) == ""
