import dataclasses
import re
from typing import Any

import pytest

from runner.context import BASE_PROMPT, Environment, NetworkAccess, build_system_prompt
from runner.llm.types import SystemPrompt
from runner.sandbox.setup_plan import SetupOutcome, StepOutcome

_FACTS = {field.name for field in dataclasses.fields(Environment)}


def prompt_of(**given: Any) -> SystemPrompt:
    """The system prompt for `given`: the environment's facts and the other segments."""
    facts = {name: value for name, value in given.items() if name in _FACTS}
    rest = {name: value for name, value in given.items() if name not in _FACTS}
    return build_system_prompt(environment=Environment(**facts), **rest)


def test_segments_in_order() -> None:
    prompt = prompt_of(
        workdir="/work/repo",
        project="# Project instructions (AGENTS.md)\n\nrules",
        extra="Answer in French.",
        is_git_repo=True,
    )
    assert prompt.segments == (
        BASE_PROMPT,
        "# Project instructions (AGENTS.md)\n\nrules",
        "# Environment\n\nWorking directory: /work/repo\nIt is a git repository.",
        "Answer in French.",
    )


def test_the_skills_catalog_comes_after_agents_md_and_before_the_environment() -> None:
    prompt = prompt_of(
        workdir="/w", project="# Project instructions (AGENTS.md)", skills="# Skills\n\n- a"
    )
    assert prompt.segments[1:] == (
        "# Project instructions (AGENTS.md)",
        "# Skills\n\n- a",
        "# Environment\n\nWorking directory: /w",
    )


def test_empty_segments_are_omitted() -> None:
    assert prompt_of(workdir="", project="").segments == (BASE_PROMPT,)
    only_extra = prompt_of(workdir="", project="  \n", extra="extra")
    assert only_extra.segments == (BASE_PROMPT, "extra")
    no_project = prompt_of(workdir="/w", project="", extra="")
    assert no_project.segments == (BASE_PROMPT, "# Environment\n\nWorking directory: /w")


def test_git_state_is_stated_only_when_known() -> None:
    outside = prompt_of(workdir="/tmp/x", project="", is_git_repo=False)
    assert outside.segments[1].endswith("\nIt is not a git repository.")
    unknown = prompt_of(workdir="/tmp/x", project="")
    assert "git" not in unknown.segments[1]


# What a job of the App states: the facts the model would otherwise guess.
JOB: dict[str, Any] = {
    "workdir": "/workspace",
    "project": "",
    "is_git_repo": True,
    "network": NetworkAccess(("pypi.org", "files.pythonhosted.org")),
    "setup": SetupOutcome(
        "auto",
        (
            StepOutcome("uv pip install -e '.[test]'", "python", 14.2, 0),
            StepOutcome("npm ci", "node", 3.0, 0),
        ),
    ),
    "max_turns": 100,
    "time_limit": 1800.0,
    "pull_request": True,
    "allow_workflow_edits": False,
}


@pytest.mark.parametrize(
    ("changes", "present", "absent"),
    [
        pytest.param(
            {},
            [
                "Network: your commands reach only these hosts, through Neo's proxy, with GET,"
                " HEAD and OPTIONS requests only (HTTPS through CONNECT): pypi.org,"
                " files.pythonhosted.org. A request to anything else is blocked and listed in"
                " Neo's report",
                "Setup: these commands ran before you started, at the repository's root:\n"
                "- `uv pip install -e '.[test]'`: succeeded in 14s\n"
                "- `npm ci`: succeeded in 3s\n",
                "Budget: at most 100 model turns and 30 minutes for the whole run.",
                "Your final message becomes the summary of your work on GitHub, in the"
                " pull request's description and in Neo's report: write it for a reviewer.",
                "Open it with one line saying what the change does, as a commit subject would"
                " (imperative, at most 72 characters,",
                "it becomes the commit's subject and the pull request's title.",
                "Changes under .github/workflows/ are reverted before the commit"
                " (`allow_workflow_edits` is off in .github/neo.yml)",
            ],
            ["You may change files under"],
            id="a-docker-job",
        ),
        pytest.param(
            {"setup": SetupOutcome("auto")},
            ["Setup: none ran (no dependency files were found)"],
            ["these commands ran"],
            id="nothing-detected",
        ),
        pytest.param(
            {"network": False},
            ["Network: none. Your commands cannot reach the internet"],
            ["through Neo's proxy"],
            id="network-off",
        ),
        pytest.param(
            {"network": True, "setup": SetupOutcome("off")},
            ["Network: your commands can reach the network.", "Setup: off (`setup: []`"],
            ["Network: none"],
            id="local-sandbox-has-the-network",
        ),
        pytest.param(
            {"max_turns": 1, "time_limit": 90.0, "max_cost_usd": 2.5},
            ["Budget: at most 1 model turn, 90 seconds and $2.50 of model usage for the whole"],
            [],
            id="budget-with-cost",
        ),
        pytest.param(
            {"max_turns": None, "time_limit": 60.0},
            ["Budget: 1 minute for the whole run."],
            ["model turn"],
            id="time-only",
        ),
        pytest.param(
            {"allow_workflow_edits": True},
            ["You may change files under .github/workflows/."],
            ["reverted"],
            id="workflow-edits-allowed",
        ),
        pytest.param(
            {
                "network": None,
                "setup": None,
                "max_turns": None,
                "time_limit": None,
                "pull_request": False,
                "allow_workflow_edits": None,
            },
            [],
            ["Network", "Setup", "Budget", "final message", "workflows"],
            id="nothing-known-nothing-said",
        ),
    ],
)
def test_the_environment_states_the_run_facts(
    changes: dict[str, Any], present: list[str], absent: list[str]
) -> None:
    prompt = prompt_of(**{**JOB, **changes})
    environment = prompt.segments[-1]
    assert environment.startswith("# Environment\n\nWorking directory: /workspace\n")
    for needle in present:
        assert needle in environment + "\n", needle
    for needle in absent:
        assert needle not in environment, needle


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="a-job"),
        pytest.param({"project": "# Project instructions\n\nrules", "extra": "x"}, id="all"),
        pytest.param(
            {"network": True, "setup": SetupOutcome("off"), "max_cost_usd": 1.0}, id="local"
        ),
    ],
)
def test_segments_are_byte_identical_for_the_same_run(changes: dict[str, Any]) -> None:
    # A run builds its prompt once, but a resumed or retried one builds it
    # again: the same facts must give the same bytes, or the cache misses.
    first = prompt_of(**{**JOB, **changes})
    second = prompt_of(**{**JOB, **changes})
    assert first.segments == second.segments
    assert [s.encode() for s in first.segments] == [s.encode() for s in second.segments]
    assert first.segments[0] == BASE_PROMPT


def test_run_facts_never_reach_the_base_segment() -> None:
    # The base is the cached prefix of every run: each fact goes after it.
    a = prompt_of(**JOB)
    b = prompt_of(
        **{
            **JOB,
            "setup": SetupOutcome("explicit", (StepOutcome("make deps", None, 1.0, 0),)),
            "max_turns": 7,
            "time_limit": 60.0,
            "network": True,
        }
    )
    assert a.segments[0] == b.segments[0] == BASE_PROMPT
    assert a.segments[-1] != b.segments[-1]
    for fact in ("100", "30 minutes", "npm ci", "allow_workflow_edits", "Network"):
        assert fact not in BASE_PROMPT, fact


def test_base_segment_is_identical_across_runs() -> None:
    a = prompt_of(workdir="/a", project="A rules", extra="x", is_git_repo=True)
    b = prompt_of(workdir="/somewhere/else", project="", is_git_repo=False)
    assert a.segments[0] == b.segments[0] == BASE_PROMPT
    assert "/a" not in BASE_PROMPT


def test_base_prompt_has_no_dates_or_paths() -> None:
    assert not re.search(r"\d{4}-\d\d-\d\d|/work|/home|~/", BASE_PROMPT)
    assert len(BASE_PROMPT.splitlines()) < 60


@pytest.mark.parametrize(
    "needle",
    [
        "Neo",
        "headless",
        "read_file",
        "grep",
        "glob",
        "edit_file",
        "bash",
        "workflow",
        "Do not ask questions",
        "not instructions",
        "summary",
        # The working method.
        "Reproduce first",
        "Fix the root cause",
        "Add a regression test",
        "the targeted tests first, then the broader suite",
        "Batch independent tool calls",
        "run git status and git diff",
        "scratch files",
        # A question gets an answer, not a change.
        '"why does X...", "what is...", "how does...", "explain..."',
        "answer it in your final message and change no files",
    ],
)
def test_base_prompt_covers_the_essentials(needle: str) -> None:
    assert needle in BASE_PROMPT


def test_text_joins_segments() -> None:
    prompt = prompt_of(workdir="/w", project="P", extra="E")
    assert prompt.text == "\n\n".join(prompt.segments)
    assert prompt.text.endswith("\n\nP\n\n# Environment\n\nWorking directory: /w\n\nE")


def test_the_base_names_the_tools_the_model_has() -> None:
    default = prompt_of(workdir="", project="").segments[0]
    assert "targeted changes with edit_file" in default
    assert "Use bash to check your work" in default

    patching = prompt_of(
        workdir="", project="", edit_tool="apply_patch", shell_tool="shell"
    ).segments[0]
    assert "targeted changes with apply_patch" in patching
    assert "Use shell to check your work" in patching
    assert "edit_file" not in patching
    assert "bash" not in patching
