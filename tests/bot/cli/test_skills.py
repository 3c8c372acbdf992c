"""`neo skills list` as a real process, on a real working tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NEO = Path(sys.executable).with_name("neo")


def neo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NEO), "skills", "list", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def test_it_lists_what_a_run_sees_and_why_each_other_was_skipped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".neo/skills/release-notes").mkdir(parents=True)
    (repo / ".neo/skills/release-notes/SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Ours, in CHANGES.md.\n---\nSteps.\n"
    )
    (repo / ".claude/skills/broken").mkdir(parents=True)
    (repo / ".claude/skills/broken/SKILL.md").write_text("---\nname: Broken\n---\n")
    os.symlink(tmp_path, repo / ".neo/skills/escape")

    done = neo("--repo", str(repo), "--no-skill", "update-dependencies", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "3 skill(s):"
    assert "  release-notes        .neo/skills/release-notes/SKILL.md" in lines
    assert "Ours, in CHANGES.md." in done.stdout
    assert "  .neo/skills/escape: it links outside the repository" in lines
    assert any(line.startswith("  .claude/skills/broken/SKILL.md: name 'Broken'") for line in lines)
    assert (
        "  built-in update-dependencies: 'update-dependencies' is disabled"
        " (disabled_skills or --no-skill)" in lines
    )
    assert (
        "  built-in release-notes: 'release-notes' is already defined by"
        " .neo/skills/release-notes/SKILL.md" in lines
    )


def test_the_repositorys_config_disables_skills_and_an_invalid_one_is_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/neo.yml").write_text("disabled_skills: [fix-ci]\n")

    done = neo(cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "  built-in fix-ci: 'fix-ci' is disabled (disabled_skills or --no-skill)" in (
        done.stdout.splitlines()
    )
    (tmp_path / ".github/neo.yml").write_text("disabled_skills: [Fix CI]\n")
    bad = neo(cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.startswith("neo: error: .github/neo.yml: disabled_skills")
    assert bad.stderr.count("\n") == 1


def test_a_missing_repository_is_one_line_and_usage_status(tmp_path: Path) -> None:
    done = neo("--repo", str(tmp_path / "nowhere"), cwd=tmp_path)

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"neo: error: --repo {tmp_path / 'nowhere'} is not a directory\n"
