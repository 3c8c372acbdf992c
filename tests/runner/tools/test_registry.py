from __future__ import annotations

from collections.abc import Mapping

import jsonschema
import pytest

from runner.llm.types import JSON
from runner.sandbox import LocalSandbox
from runner.tools import Checklist, default_tools, editing_tools, patch_family, tools_for


def keys(schema: JSON) -> set[str]:
    """Every schema keyword used, at any depth, property names excepted."""
    if isinstance(schema, list):
        return set().union(*(keys(item) for item in schema))
    if not isinstance(schema, Mapping):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties" and isinstance(value, Mapping):
            found |= set().union(*(keys(sub) for sub in value.values()))
        else:
            found |= keys(value)
    return found


def test_default_tools(sandbox: LocalSandbox) -> None:
    names = [tool.spec.name for tool in default_tools(sandbox)]

    assert names == [
        "read_file",
        "write_file",
        "edit_file",
        "bash",
        "bash_output",
        "kill_shell",
        "grep",
        "glob",
    ]


def test_workflow_adds_the_checklist_tool(sandbox: LocalSandbox) -> None:
    tools = default_tools(sandbox, checklist=Checklist())

    assert tools[-1].spec.name == "workflow"
    assert len(tools) == 9


# The shared contract runs over both families' sets.
FAMILIES = ["claude-sonnet-5-5", "gpt-5"]


@pytest.mark.parametrize("model", FAMILIES)
def test_every_schema_is_valid_closed_and_untitled(sandbox: LocalSandbox, model: str) -> None:
    tools = tools_for(model, sandbox, checklist=Checklist())
    assert len({tool.spec.name for tool in tools}) == len(tools)
    for tool in tools:
        schema = dict(tool.spec.input_schema)
        jsonschema.validators.validator_for(schema).check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert not keys(schema) & {"title", "$ref", "$defs", "anyOf"}, tool.spec.name
        properties = schema["properties"]
        assert isinstance(properties, Mapping)
        for name, prop in properties.items():
            assert isinstance(prop, Mapping)
            assert prop.get("description"), f"{tool.spec.name}.{name}"
        assert tool.spec.description


def test_gpt5_gets_apply_patch_and_shell(sandbox: LocalSandbox) -> None:
    names = [tool.spec.name for tool in tools_for("gpt-5", sandbox, checklist=Checklist())]

    assert names == [
        "read_file",
        "apply_patch",
        "shell",
        "bash_output",
        "kill_shell",
        "grep",
        "glob",
        "workflow",
    ]


def test_claude_gets_edit_file_and_bash(sandbox: LocalSandbox) -> None:
    tools = tools_for("claude-sonnet-5-5", sandbox)

    assert [tool.spec.name for tool in tools] == [tool.spec.name for tool in default_tools(sandbox)]
    assert {"edit_file", "bash"} <= {tool.spec.name for tool in tools}


@pytest.mark.parametrize(
    ("model", "patches"),
    [
        ("gpt-5", True),
        ("gpt-5-mini", True),
        ("gpt-5.1-codex", True),
        ("openai/gpt-5", True),
        ("codex-mini-latest", True),
        ("o3", True),
        ("o4-mini", True),
        ("claude-opus-4-1", False),
        ("anthropic/claude-sonnet-5.5", False),
        ("gpt-4.1", False),
        ("gpt-4o", False),
        ("gpt-oss-120b", False),
        ("qwen2.5-coder:7b", False),
        ("olmo-2", False),
    ],
)
def test_the_family_is_told_by_the_model_name(model: str, patches: bool) -> None:
    assert patch_family(model) is patches
    assert editing_tools(model) == (("apply_patch", "shell") if patches else ("edit_file", "bash"))
