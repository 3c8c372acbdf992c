from __future__ import annotations

from collections.abc import Mapping

import jsonschema

from runner.llm.types import JSON
from runner.sandbox import LocalSandbox
from runner.tools import Checklist, default_tools


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


def test_every_schema_is_valid_closed_and_untitled(sandbox: LocalSandbox) -> None:
    for tool in default_tools(sandbox, checklist=Checklist()):
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
