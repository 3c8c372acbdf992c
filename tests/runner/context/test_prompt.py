import re

from runner.context import BASE_PROMPT, build_system_prompt


def test_segments_in_order() -> None:
    prompt = build_system_prompt(
        workdir="/work/repo",
        project="# Project instructions (AGENTS.md)\n\nrules",
        extra="Answer in French.",
        is_git_repo=True,
    )
    assert prompt.segments == (
        BASE_PROMPT,
        "# Environment\n\nWorking directory: /work/repo\nIt is a git repository.",
        "# Project instructions (AGENTS.md)\n\nrules",
        "Answer in French.",
    )


def test_empty_segments_are_omitted() -> None:
    assert build_system_prompt(workdir="", project="").segments == (BASE_PROMPT,)
    only_extra = build_system_prompt(workdir="", project="  \n", extra="extra")
    assert only_extra.segments == (BASE_PROMPT, "extra")
    no_project = build_system_prompt(workdir="/w", project="", extra="")
    assert no_project.segments == (BASE_PROMPT, "# Environment\n\nWorking directory: /w")


def test_git_state_is_stated_only_when_known() -> None:
    outside = build_system_prompt(workdir="/tmp/x", project="", is_git_repo=False)
    assert outside.segments[1].endswith("\nIt is not a git repository.")
    unknown = build_system_prompt(workdir="/tmp/x", project="")
    assert "git" not in unknown.segments[1]


def test_base_segment_is_identical_across_runs() -> None:
    a = build_system_prompt(workdir="/a", project="A rules", extra="x", is_git_repo=True)
    b = build_system_prompt(workdir="/somewhere/else", project="", is_git_repo=False)
    assert a.segments[0] == b.segments[0] == BASE_PROMPT
    assert "/a" not in BASE_PROMPT


def test_base_prompt_has_no_dates_or_paths() -> None:
    assert not re.search(r"\d{4}-\d\d-\d\d|/work|/home|~/", BASE_PROMPT)
    assert len(BASE_PROMPT.splitlines()) < 60


def test_base_prompt_covers_the_essentials() -> None:
    for needle in [
        "Neo",
        "headless",
        "read_file",
        "grep",
        "glob",
        "edit_file",
        "bash",
        "workflow",
        "tests",
        "Do not ask questions",
        "not instructions",
        "summary",
    ]:
        assert needle in BASE_PROMPT, needle


def test_text_joins_segments() -> None:
    prompt = build_system_prompt(workdir="/w", project="P", extra="E")
    assert prompt.text == "\n\n".join(prompt.segments)
    assert prompt.text.endswith("\n\nP\n\nE")
