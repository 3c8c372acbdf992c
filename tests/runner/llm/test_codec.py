import json

import pytest

from runner.llm.codec import CodecError, message_from_json, message_to_json
from runner.llm.types import Image, Message, Opaque, Text, ToolResult, ToolUse, Usage

MESSAGES = [
    Message("user", ()),
    Message("user", (Text("fix the flaky date test"),)),
    Message("user", (Text(""), Text("zwei Teile, ünïcödé ✓ 🚀\n\ttabs"))),
    Message("user", (Image("image/png", "iVBORw0KGgo="), Text("what is this?"))),
    Message(
        "assistant",
        (
            Opaque("anthropic", "thinking", {"thinking": "hmm", "signature": "c2ln"}),
            Text("Let me look."),
            ToolUse("toolu_1", "read_file", {"path": "src/a.py", "limit": 200}),
            ToolUse(
                "toolu_2",
                "bash",
                {"argv": ["pytest", "-q"], "env": {}, "timeout": 1.5, "x": None, "y": True},
            ),
        ),
        usage=Usage(100, 20, 3, 4000),
    ),
    Message("assistant", (Text("done"),), usage=Usage()),
    Message(
        "user",
        (
            ToolResult("toolu_1", (Text("line 1\nline 2"),)),
            ToolResult("toolu_2", (Text("boom"), Image("image/jpeg", "/9j/")), is_error=True),
            ToolResult("toolu_3", ()),
        ),
    ),
    Message("assistant", (Opaque("google", "thought", {"nested": [{"a": [1, 2.5, "3"]}]}),)),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_round_trip_is_exact(message: Message) -> None:
    data = message_to_json(message)
    # Through real JSON text, as a session file stores it.
    assert message_from_json(json.loads(json.dumps(data))) == message
    assert message_from_json(data) == message


def test_shape_names_every_block_type() -> None:
    data = message_to_json(MESSAGES[4])
    assert data["role"] == "assistant"
    assert data["usage"] == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 4000,
    }
    assert data["content"] == [
        {
            "type": "opaque",
            "provider": "anthropic",
            "kind": "thinking",
            "data": {"thinking": "hmm", "signature": "c2ln"},
        },
        {"type": "text", "text": "Let me look."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "read_file",
            "input": {"path": "src/a.py", "limit": 200},
        },
        {
            "type": "tool_use",
            "id": "toolu_2",
            "name": "bash",
            "input": {"argv": ["pytest", "-q"], "env": {}, "timeout": 1.5, "x": None, "y": True},
        },
    ]
    result = message_to_json(MESSAGES[6])["content"]
    assert isinstance(result, list)
    assert result[1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": [
            {"type": "text", "text": "boom"},
            {"type": "image", "media_type": "image/jpeg", "data": "/9j/"},
        ],
        "is_error": True,
    }


def test_usage_is_absent_when_unset() -> None:
    assert "usage" not in message_to_json(Message("user", (Text("hi"),)))


def test_payloads_are_copied_both_ways() -> None:
    tool_input: dict[str, object] = {"argv": ["ls"]}
    message = Message("assistant", (ToolUse("t", "bash", {"argv": ["ls"]}),))
    data = message_to_json(message)
    content = data["content"]
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, dict)
    argv = block["input"]
    assert isinstance(argv, dict)
    inner = argv["argv"]
    assert isinstance(inner, list)
    inner.append("-la")
    assert message.tool_uses[0].input == {"argv": ["ls"]}

    raw = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": tool_input}],
    }
    decoded = message_from_json(raw)
    argv_list = tool_input["argv"]
    assert isinstance(argv_list, list)
    argv_list.append("-la")
    assert decoded.tool_uses[0].input == {"argv": ["ls"]}


def test_unknown_keys_are_ignored() -> None:
    raw = {"type": "message", "role": "user", "content": [{"type": "text", "text": "x"}], "new": 1}
    assert message_from_json(raw) == Message("user", (Text("x"),))


def test_missing_usage_counts_are_zero() -> None:
    raw = {"role": "assistant", "content": [], "usage": {"output_tokens": 7}}
    assert message_from_json(raw).usage == Usage(output_tokens=7)


def _msg(*blocks: object, role: object = "user") -> dict[str, object]:
    return {"role": role, "content": list(blocks)}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], "message must be an object, got array"),
        (_msg(role="system"), "message role must be 'user' or 'assistant', got 'system'"),
        ({"role": "user"}, "message content must be an array, got null"),
        ({"role": "user", "content": "hi"}, "message content must be an array, got string"),
        (_msg("hi"), "content[0] must be an object, got string"),
        (_msg({"text": "x"}), "content[0]: unknown block type None"),
        (_msg({"type": "video"}), "content[0]: unknown block type 'video'"),
        (_msg({"type": "text"}), "content[0] (text).text must be a string, got null"),
        (_msg({"type": "text", "text": 3}), "content[0] (text).text must be a string, got number"),
        (
            _msg({"type": "text", "text": "ok"}, {"type": "image", "media_type": "image/png"}),
            "content[1] (image).data must be a string, got null",
        ),
        (
            _msg({"type": "tool_use", "id": "t", "name": "bash", "input": []}),
            "content[0] (tool_use).input must be an object, got array",
        ),
        (
            _msg({"type": "tool_result", "tool_use_id": "t", "content": "out"}),
            "content[0] (tool_result).content must be an array, got string",
        ),
        (
            _msg(
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "tool_use", "id": "u", "name": "n", "input": {}}],
                }
            ),
            "content[0] (tool_result).content[0] must be a text or image block",
        ),
        (
            _msg({"type": "tool_result", "tool_use_id": "t", "content": [], "is_error": "no"}),
            "content[0] (tool_result).is_error must be a boolean, got string",
        ),
        (
            _msg({"type": "opaque", "provider": "p", "kind": "k", "data": None}),
            "content[0] (opaque).data must be an object, got null",
        ),
        (
            _msg({"type": "opaque", "provider": "p", "kind": "k", "data": {"a": {1, 2}}}),
            "content[0] (opaque).data['a']: not a JSON value: set",
        ),
        (
            {"role": "assistant", "content": [], "usage": {"input_tokens": -1}},
            "usage.input_tokens must be a non-negative integer, got -1",
        ),
        (
            {"role": "assistant", "content": [], "usage": {"output_tokens": True}},
            "usage.output_tokens must be a non-negative integer, got True",
        ),
        ({"role": "assistant", "content": [], "usage": [1]}, "usage must be an object, got array"),
    ],
)
def test_malformed_data_raises_a_clear_value_error(data: object, expected: str) -> None:
    with pytest.raises(CodecError) as excinfo:
        message_from_json(data)  # type: ignore[arg-type]
    assert str(excinfo.value) == expected
    assert isinstance(excinfo.value, ValueError)
    assert "\n" not in str(excinfo.value)


def test_long_values_are_shortened_in_errors() -> None:
    with pytest.raises(CodecError) as excinfo:
        message_from_json(_msg(role="x" * 1000))
    assert len(str(excinfo.value)) < 120


def test_encoding_rejects_non_json_payloads() -> None:
    message = Message("assistant", (ToolUse("t", "bash", {"argv": ("ls",)}),))  # type: ignore[dict-item]
    with pytest.raises(CodecError, match=r"content\[0\]\.input\['argv'\]: not a JSON value: tuple"):
        message_to_json(message)
