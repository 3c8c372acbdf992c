import os
from pathlib import Path

import pytest

from runner.context import find_git_root, project_context

HEADING = "# Project instructions (AGENTS.md)"


def make_repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def test_find_git_root_walks_up_to_a_git_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    assert find_git_root(deep) == repo.resolve()
    assert find_git_root(repo) == repo.resolve()


def test_find_git_root_accepts_a_git_file(tmp_path: Path) -> None:
    # Worktrees and submodules have a `.git` file pointing at the real directory.
    worktree = tmp_path / "wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert find_git_root(worktree / "src") == worktree.resolve()


def test_find_git_root_is_none_outside_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    if find_git_root(tmp_path) is not None:
        pytest.skip("the temporary directory itself lies inside a git repository")
    assert find_git_root(plain) is None


def test_files_are_collected_from_root_down_to_cwd(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Run tests with `make test`.\n")
    (repo / "pkg" / "AGENTS.md").write_text("pkg: use tabs\n")
    (cwd / "AGENTS.md").write_text("sub: no network\n")
    # Not on the path from the root to cwd: ignored.
    (repo / "other").mkdir()
    (repo / "other" / "AGENTS.md").write_text("other rules\n")
    (cwd / "deeper").mkdir()
    (cwd / "deeper" / "AGENTS.md").write_text("deeper rules\n")

    text = project_context(cwd)

    assert text.startswith(HEADING + "\n\n")
    assert "other rules" not in text
    assert "deeper rules" not in text
    sections = text.split("\n\n## ")[1:]
    assert sections == [
        "AGENTS.md\n\nRun tests with `make test`.",
        "pkg/AGENTS.md\n\npkg: use tabs",
        "pkg/sub/AGENTS.md\n\nsub: no network",
    ]


def test_directories_without_a_file_are_skipped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    cwd = repo / "a" / "b"
    cwd.mkdir(parents=True)
    (repo / "a" / "AGENTS.md").write_text("only a\n")
    text = project_context(cwd)
    assert text.split("\n\n## ")[1:] == ["a/AGENTS.md\n\nonly a"]


def test_outside_a_repository_only_cwd_counts(tmp_path: Path) -> None:
    if find_git_root(tmp_path) is not None:
        pytest.skip("the temporary directory itself lies inside a git repository")
    (tmp_path / "AGENTS.md").write_text("parent rules\n")
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("project rules\n")
    text = project_context(cwd)
    assert "parent rules" not in text
    assert text.split("\n\n## ")[1:] == ["AGENTS.md\n\nproject rules"]


def test_no_file_means_empty_string(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("not instructions\n")
    assert project_context(repo) == ""


def test_unreadable_and_non_utf8_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    cwd = repo / "bin"
    cwd.mkdir()
    (repo / "AGENTS.md").write_text("good root rules\n")
    (cwd / "AGENTS.md").write_bytes(b"caf\xe9 latin-1\n")
    text = project_context(cwd)
    assert "good root rules" in text
    assert "latin-1" not in text
    assert "## bin/AGENTS.md\n\n(skipped: not valid UTF-8)" in text


def test_a_directory_named_agents_md_is_skipped_with_a_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").mkdir()
    assert project_context(repo).endswith("## AGENTS.md\n\n(skipped: not a regular file)")


def test_links_out_of_the_repository_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host-credentials"
    secret.write_text("API_KEY=sk-very-secret\n")
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").symlink_to(secret)
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("linked inside\n")
    sub = repo / "sub"
    sub.mkdir()
    (sub / "AGENTS.md").symlink_to(repo / "docs" / "rules.md")
    text = project_context(sub)
    assert "sk-very-secret" not in text
    assert "## AGENTS.md\n\n(skipped: it links outside the repository)" in text
    assert "## sub/AGENTS.md\n\nlinked inside" in text


def test_a_utf8_bom_is_dropped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_bytes("\ufeffrules".encode())
    assert project_context(repo).endswith("## AGENTS.md\n\nrules")


def test_output_within_the_limit_is_unchanged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("é" * 100)
    full = project_context(repo)
    assert project_context(repo, limit=len(full.encode())) == full
    assert "truncated" not in full


@pytest.mark.parametrize("limit", [400, 401, 402, 403, 1000, 1001, 1002])
def test_truncation_respects_the_limit_and_utf8(tmp_path: Path, limit: int) -> None:
    repo = make_repo(tmp_path / "repo")
    # Three- and four-byte characters, so most cut points fall inside one.
    (repo / "AGENTS.md").write_text("€𝄞" * 400)
    full = project_context(repo, limit=10**6).encode()

    text = project_context(repo, limit=limit)

    data = text.encode("utf-8")  # a split character would fail to encode
    assert len(data) <= limit
    assert limit - len(data) <= 4  # only a partial character is dropped
    marker = text[text.rindex("\n\n[") :]
    kept = len(data) - len(marker.encode())
    assert marker == f"\n\n[AGENTS.md truncated: {len(full) - kept} of {len(full)} bytes omitted]"
    assert full.startswith(data[:kept])


def test_truncation_with_a_tiny_limit_stays_within_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("x" * 1000)
    assert len(project_context(repo, limit=10).encode()) <= 10


def test_cwd_may_be_given_through_a_symlink(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    (repo / "AGENTS.md").write_text("root\n")
    (repo / "src" / "AGENTS.md").write_text("src\n")
    link = tmp_path / "link"
    os.symlink(repo / "src", link)
    assert project_context(link).split("\n\n## ")[1:] == [
        "AGENTS.md\n\nroot",
        "src/AGENTS.md\n\nsrc",
    ]


def sections_of(text: str) -> list[str]:
    return text.split("\n\n## ")[1:]


def test_the_intro_says_the_deepest_file_governs_its_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("rules\n")
    assert "The deepest AGENTS.md governs its directory" in project_context(repo)


@pytest.mark.parametrize(
    ("files", "cwd", "read"),
    [
        pytest.param({"CLAUDE.md": "claude"}, ".", ["CLAUDE.md\n\nclaude"], id="claude"),
        pytest.param(
            {".github/copilot-instructions.md": "copilot"},
            ".",
            [".github/copilot-instructions.md\n\ncopilot"],
            id="copilot",
        ),
        pytest.param(
            {".github/copilot-instructions.md": "copilot", "CLAUDE.md": "claude"},
            ".",
            ["CLAUDE.md\n\nclaude", ".github/copilot-instructions.md\n\ncopilot"],
            id="both-claude-first",
        ),
        pytest.param(
            {"AGENTS.md": "agents", "CLAUDE.md": "claude"},
            ".",
            ["AGENTS.md\n\nagents"],
            id="agents-md-wins",
        ),
        pytest.param(
            {"CLAUDE.md": "claude", "pkg/AGENTS.md": "pkg rules"},
            "pkg",
            ["CLAUDE.md\n\nclaude", "pkg/AGENTS.md\n\npkg rules"],
            id="root-fallback-then-nested-file-on-the-path",
        ),
        pytest.param({"pkg/CLAUDE.md": "nested claude"}, "pkg", [], id="only-at-the-root"),
    ],
)
def test_claude_md_and_copilot_instructions_stand_in_for_a_root_agents_md(
    tmp_path: Path, files: dict[str, str], cwd: str, read: list[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(content + "\n")
    text = project_context(repo / cwd)
    assert sections_of(text) == read
    assert (text == "") == (not read)


def test_a_fallback_linking_out_of_the_repository_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host-credentials"
    secret.write_text("API_KEY=sk-very-secret\n")
    repo = make_repo(tmp_path / "repo")
    (repo / "CLAUDE.md").symlink_to(secret)
    text = project_context(repo)
    assert "sk-very-secret" not in text
    assert sections_of(text) == ["CLAUDE.md\n\n(skipped: it links outside the repository)"]


def nested_listing(text: str) -> list[str]:
    """The paths the nested-files section lists, in order."""
    section = next(part for part in text.split("\n\n") if part.startswith("Deeper directories"))
    return [line[2:] for line in section.splitlines()[1:]]


def test_nested_agents_md_files_are_listed_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "AGENTS.md").write_text("root rules\n")
    for name in [
        "web/AGENTS.md",
        "api/AGENTS.md",
        "api/v2/AGENTS.md",
        # Dependencies' and tools' directories hold no rules of the project.
        "node_modules/left-pad/AGENTS.md",
        ".venv/lib/AGENTS.md",
        "api/__pycache__/AGENTS.md",
    ]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name} rules\n")

    text = project_context(repo)

    assert nested_listing(text) == ["api/AGENTS.md", "api/v2/AGENTS.md", "web/AGENTS.md"]
    assert "Before you change files under one of these directories, read its AGENTS.md" in text
    assert sections_of(text) == ["AGENTS.md\n\nroot rules"]
    assert "api/AGENTS.md rules" not in text
    # The listing comes before the files, so a truncated file cannot cut it off.
    assert text.index("Deeper directories") < text.index("## AGENTS.md")


def test_nested_files_are_listed_even_without_a_root_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "lib").mkdir()
    (repo / "lib" / "AGENTS.md").write_text("lib rules\n")
    text = project_context(repo)
    assert text.startswith(HEADING)
    assert nested_listing(text) == ["lib/AGENTS.md"]
    assert sections_of(text) == []


def test_from_a_subdirectory_only_files_below_it_are_listed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ["AGENTS.md", "pkg/AGENTS.md", "pkg/deep/AGENTS.md", "other/AGENTS.md"]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    text = project_context(repo / "pkg")
    assert nested_listing(text) == ["pkg/deep/AGENTS.md"]
    assert sections_of(text) == ["AGENTS.md\n\nAGENTS.md", "pkg/AGENTS.md\n\npkg/AGENTS.md"]


def test_the_nested_listing_is_capped_and_byte_stable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    # Made in reverse, so the filesystem's order differs from the sorted one.
    for n in reversed(range(25)):
        (repo / f"m{n:02d}").mkdir()
        (repo / f"m{n:02d}" / "AGENTS.md").write_text("x\n")

    text = project_context(repo)

    assert nested_listing(text) == [f"m{n:02d}/AGENTS.md" for n in range(20)] + ["... and 5 more"]
    assert project_context(repo).encode() == text.encode()
