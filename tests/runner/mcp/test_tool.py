"""Which of a server's tools the agent is offered (pure)."""

from __future__ import annotations

from typing import Any

import mcp_types

from runner.mcp.servers import ALL_TOOLS
from runner.mcp.tool import MAX_SCHEMA_BYTES, LeftOut, offered


def tool(name: str, schema: dict[str, Any]) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, inputSchema=schema)


GOOD: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
# A valid object schema's shape, but `minimum` must be a number.
BAD: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}


def test_a_tool_whose_schema_is_not_json_schema_is_left_out_each_time_it_is_listed() -> None:
    # The second listing asks again: the verdict kept for a schema is the same one.
    for _ in range(2):
        kept, left = offered("srv", [ALL_TOOLS], [tool("good", GOOD), tool("bad", BAD)])

        assert [t.name for t in kept] == ["good"]
        [(name, reason)] = [(each.tool, each.reason) for each in left]
        assert name == "bad"
        assert reason.startswith("its input schema is not valid JSON Schema: 'one' is not of type")


def test_the_same_schema_under_another_key_order_gets_the_same_verdict() -> None:
    reordered: dict[str, Any] = {"properties": BAD["properties"], "type": "object"}

    _, left = offered("srv", [ALL_TOOLS], [tool("bad", reordered)])

    assert [each.tool for each in left] == ["bad"]


def test_a_schema_over_the_bound_is_left_out_before_it_is_checked() -> None:
    big: dict[str, Any] = {"type": "object", "description": "x" * MAX_SCHEMA_BYTES}

    _, left = offered("srv", [ALL_TOOLS], [tool("big", big)])

    assert left == [LeftOut("big", f"its input schema is over {MAX_SCHEMA_BYTES // 1024} KiB")]
