from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner.skills import Skill, Skipped, discover, ref_skills, tree_skills
from runner.skills.discovery import BUILTIN_DIR, builtin_skills
from tests.fakes import git_env

BUILTINS = {"fix-ci", "release-notes", "review-pull-request", "update-dependencies"}


def skill_md(name: str, description: str = "When to use it.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n"


def write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "outside" / "stolen").mkdir(parents=True)
    (tmp_path / "outside" / "stolen" / "SKILL.md").write_text(skill_md("stolen"))
    return root


def test_the_built_ins_are_valid_and_served_at_virtual_paths() -> None:
    found = builtin_skills()

    assert all(isinstance(each, Skill) for each in found)
    assert {each.name for each in found if isinstance(each, Skill)} == BUILTINS
    fix = next(s for s in found if isinstance(s, Skill) and s.name == "fix-ci")
    assert fix.path == "/neo/skills/fix-ci/SKILL.md"
    assert fix.origin == "built-in fix-ci"
    assert fix.body.startswith("# Fixing a failing CI run")
    assert (BUILTIN_DIR / "fix-ci" / "SKILL.md").is_file()


def test_neo_then_agents_then_claude_then_built_in_and_each_loser_says_who_won(
    repo: Path,
) -> None:
    write(repo, ".claude/skills/release-notes/SKILL.md", skill_md("release-notes", "claude"))
    write(repo, ".agents/skills/release-notes/SKILL.md", skill_md("release-notes", "agents"))
    write(repo, ".agents/skills/triage/SKILL.md", skill_md("triage", "agents"))
    write(repo, ".claude/skills/triage/SKILL.md", skill_md("triage", "claude"))
    write(repo, ".neo/skills/release-notes/SKILL.md", skill_md("release-notes", "neo"))

    found = discover(tree_skills(repo))

    by_name = {skill.name: skill for skill in found.skills}
    assert [skill.name for skill in found.skills] == sorted(BUILTINS | {"triage"})
    assert by_name["release-notes"].description == "neo"
    assert by_name["release-notes"].path == ".neo/skills/release-notes/SKILL.md"
    assert by_name["triage"].description == "agents"
    assert by_name["fix-ci"].source == "builtin"
    won = "is already defined by"
    assert found.skipped == (
        Skipped(
            ".agents/skills/release-notes/SKILL.md",
            f"'release-notes' {won} .neo/skills/release-notes/SKILL.md",
        ),
        Skipped(
            ".claude/skills/release-notes/SKILL.md",
            f"'release-notes' {won} .neo/skills/release-notes/SKILL.md",
        ),
        Skipped(".claude/skills/triage/SKILL.md", f"'triage' {won} .agents/skills/triage/SKILL.md"),
        Skipped(
            "built-in release-notes", f"'release-notes' {won} .neo/skills/release-notes/SKILL.md"
        ),
    )


def test_links_out_of_the_repository_are_refused_and_links_inside_followed(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(repo, "docs/shared/SKILL.md", skill_md("shared"))
    (repo / ".neo/skills/inner").mkdir(parents=True)
    os.symlink(outside / "stolen", repo / ".neo/skills/stolen")
    os.symlink(outside / "stolen" / "SKILL.md", repo / ".neo/skills/inner/SKILL.md")
    os.symlink(repo / "docs/shared", repo / ".neo/skills/shared")
    os.symlink(outside, repo / ".agents")

    found = discover(tree_skills(repo))

    assert "shared" in {skill.name for skill in found.skills}
    assert "stolen" not in {skill.name for skill in found.skills}
    assert found.skipped == (
        Skipped(".neo/skills/inner/SKILL.md", "it links outside the repository"),
        Skipped(".neo/skills/stolen", "it links outside the repository"),
        Skipped(".agents/skills", "it links outside the repository"),
    )


def test_invalid_folders_are_noted_and_stray_files_ignored(repo: Path) -> None:
    write(repo, ".neo/skills/README.md", "not a skill")
    (repo / ".neo/skills/empty").mkdir()
    write(repo, ".neo/skills/bad/SKILL.md", "no front matter\n")

    found = discover(tree_skills(repo), disabled=["fix-ci"])

    assert found.skipped == (
        Skipped(
            ".neo/skills/bad/SKILL.md", "no front matter: the file must start with a line '---'"
        ),
        Skipped(".neo/skills/empty", "no SKILL.md in the folder"),
        Skipped("built-in fix-ci", "'fix-ci' is disabled (disabled_skills or --no-skill)"),
    )
    assert "fix-ci" not in {skill.name for skill in found.skills}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        env=git_env(),
        check=True,
    )
    return done.stdout


async def test_a_branchs_skills_are_read_from_git_and_its_links_never_followed(
    repo: Path, tmp_path: Path
) -> None:
    git(repo, "init", "-q", "-b", "main")
    write(repo, ".neo/skills/release-notes/SKILL.md", skill_md("release-notes", "main's"))
    (repo / ".neo/skills/inside").mkdir(parents=True)
    os.symlink("../release-notes/SKILL.md", repo / ".neo/skills/inside/SKILL.md")
    os.symlink(tmp_path / "outside" / "stolen", repo / ".neo/skills/stolen")
    write(repo, ".claude/skills/big/SKILL.md", skill_md("big") + "x" * 70_000)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "skills")
    git(repo, "checkout", "-qb", "pr")
    write(repo, ".neo/skills/release-notes/SKILL.md", skill_md("release-notes", "the PR's"))
    git(repo, "commit", "-qam", "rewrite")

    found = discover(await ref_skills(repo, "main"))

    notes = found.skills[[s.name for s in found.skills].index("release-notes")]
    assert notes.description == "main's"
    assert notes.origin == ".neo/skills/release-notes/SKILL.md on main"
    assert notes.path == "/neo/skills/release-notes/SKILL.md"
    assert found.skipped[:3] == (
        Skipped(".neo/skills/inside/SKILL.md on main", "a symbolic link, not followed"),
        Skipped(".neo/skills/stolen on main", "a symbolic link, not followed"),
        Skipped(".claude/skills/big/SKILL.md on main", "larger than 64 KiB"),
    )


def test_a_loop_of_links_is_one_note_not_a_traceback(repo: Path) -> None:
    (repo / ".neo/skills").mkdir(parents=True)
    os.symlink("two", repo / ".neo/skills/one")
    os.symlink("one", repo / ".neo/skills/two")
    os.symlink("loop", repo / ".claude")
    os.symlink(".claude", repo / "loop")

    assert tree_skills(repo) == [
        Skipped(".neo/skills/one", "a loop of symbolic links"),
        Skipped(".neo/skills/two", "a loop of symbolic links"),
        Skipped(".claude/skills", "a loop of symbolic links"),
    ]
