"""Each model family's segment of the system prompt, chosen by the model's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.context.families import family_of, family_segment
from runner.context.prompt import build_system_prompt
from runner.sandbox.local import LocalSandbox
from runner.tools.checklist import Checklist
from runner.tools.registry import default_tools, tools_for


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-5", "openai"),
        ("gpt-5.1-codex", "openai"),
        ("o3", "openai"),
        ("openai/gpt-5", "openai"),
        ("claude-sonnet-5-5", "claude"),
        ("anthropic/claude-opus-4.5", "claude"),
        ("gemini-2.5-pro", "gemini"),
        ("google/gemini-3-pro", "gemini"),
        ("qwen3-coder", "other"),
        ("gpt-4.1", "other"),
    ],
)
def test_the_family_comes_from_the_model_name(model: str, family: str) -> None:
    assert family_of(model) == family
    assert bool(family_segment(model)) is (family != "other")


@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-5-5", "gemini-2.5-pro"])
def test_a_segment_names_only_tools_its_family_has(model: str, tmp_path: Path) -> None:
    box = LocalSandbox(tmp_path)
    everyone = {t.spec.name for t in [*default_tools(box), *tools_for("gpt-5", box)]}
    own = {t.spec.name for t in tools_for(model, box, checklist=Checklist())}
    words = set(family_segment(model).replace(",", " ").replace("(", " ").split())

    assert words & everyone
    assert words & everyone <= own


def test_the_segment_follows_the_base_in_the_stable_prefix() -> None:
    prompt = build_system_prompt(
        project="# AGENTS.md\nRun make test.",
        edit_tool="apply_patch",
        shell_tool="shell",
        family=family_segment("gpt-5"),
    )

    assert prompt.segments[1] == family_segment("gpt-5")
    assert prompt.segments[2].startswith("# AGENTS.md")
    assert len(build_system_prompt(project="", family="").segments) == 1
