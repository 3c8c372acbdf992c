"""Tool inputs as pydantic models, and the clean JSON schema the model is shown."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from runner.llm.types import JSON, JSONObject
from runner.tools.base import ToolError

# Keywords whose value is a map of names to subschemas, or one subschema, or a
# list of them; everything else is copied as it is.
_SCHEMA_MAPS = frozenset({"properties", "$defs", "patternProperties"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})

Input = TypeVar("Input", bound="ToolInput")


class ToolInput(BaseModel):
    """Base of every tool's input: unknown fields are refused, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def input_schema(model: type[ToolInput]) -> JSONObject:
    """`model`'s JSON schema as a model should read it.

    Nested models are inlined, pydantic's generated titles dropped, and an
    optional field (`X | None = None`) is shown as a plain `X` that may be
    left out.
    """
    schema: dict[str, Any] = model.model_json_schema()
    definitions: dict[str, Any] = schema.pop("$defs", {})
    # A model's docstring describes the Python class, not the input.
    schema.pop("description", None)
    cleaned = _clean(schema, definitions)
    assert isinstance(cleaned, dict)
    return cleaned


def parse(model: type[Input], args: JSONObject) -> Input:
    """`args` as `model`; a mismatch is a ToolError naming the field."""
    try:
        return model.model_validate(args)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ToolError(
            f"invalid input: {where}: {first['msg']}" if where else first["msg"]
        ) from None


def _clean(node: Any, definitions: dict[str, Any]) -> JSON:
    if isinstance(node, list):
        return [_clean(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node  # type: ignore[no-any-return]
    node = _inline(node, definitions)
    cleaned: JSONObject = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS:
            cleaned[key] = {name: _clean(sub, definitions) for name, sub in value.items()}
        elif key in _SCHEMA_ONE or key in _SCHEMA_LISTS:
            cleaned[key] = _clean(value, definitions)
        else:
            cleaned[key] = value
    return cleaned


def _inline(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        rest = {key: value for key, value in node.items() if key != "$ref"}
        return {**_inline(definitions[ref.removeprefix("#/$defs/")], definitions), **rest}
    variants = node.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        (kept,) = (variant for variant in variants if variant != {"type": "null"})
        rest = {key: value for key, value in node.items() if key != "anyOf"}
        if rest.get("default", ...) is None:
            del rest["default"]
        return {**_inline(kept, definitions), **rest}
    return node
